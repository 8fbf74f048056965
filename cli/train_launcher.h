// `convscope-cli train ... --nproc-per-node N`: starts N ranks of the same command on this host, as torchrun does
// (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT in each one's environment, and
// --distributed added), waits for them, and returns the first failing rank's exit status (0 when all succeed).
// Rank 0 prints and writes the merged report (it gathers the others' steps); the others print nothing on stdout.
#pragma once

namespace convscope::cli {

// Throws InputError for N < 1. When a rank fails, the ranks still running are sent SIGTERM (they would otherwise
// wait out their timeout in the rendezvous or an all-reduce) and reaped.
int launchLocalRanks(int nproc);

} // namespace convscope::cli
