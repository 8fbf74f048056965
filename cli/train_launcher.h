// `convscope-cli train ... --nproc-per-node N`: starts N ranks of the same command on this host, as torchrun does
// (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT in each one's environment, and
// --distributed added), waits for them, and returns the first failing rank's exit status (0 when all succeed).
// Rank 0 prints and writes the merged report (it gathers the others' steps); the others print nothing on stdout.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <string>

namespace convscope {
class ProcessGroup;
}

namespace convscope::cli {

// The data-parallel options `train` and `gan` share: --distributed (this process is one rank, torchrun's
// environment), --nproc-per-node N (start N ranks of this command here) and --rendezvous-timeout S.
struct DistributedArgs {
    bool distributed = false;
    int nprocPerNode = 0;
    double rendezvousTimeout = 60;
};
void addDistributedOptions(CLI::App* cmd, DistributedArgs& a);
// First in the command's callback: UnsupportedError when the build has no NCCL; InputError for a timeout that is not
// positive; with --nproc-per-node, the ranks' exit status (launchLocalRanks), which the command returns.
std::optional<int> launchRanksIfAsked(const DistributedArgs& a);
// --distributed: this process's group after the rendezvous (its GPU the one LOCAL_RANK names, unless
// CUDA_VISIBLE_DEVICES leaves it one; NCCL_NVLS_ENABLE=0 unless set). Null without --distributed.
std::shared_ptr<ProcessGroup> joinRanksIfAsked(const DistributedArgs& a);

// Throws InputError for N < 1. When a rank fails, the ranks still running are sent SIGTERM (they would otherwise
// wait out their timeout in the rendezvous or an all-reduce) and reaped.
int launchLocalRanks(int nproc);

} // namespace convscope::cli
