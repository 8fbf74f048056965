// Internal to compute/cpu: when the memory-bound ops (linear and cubic resize, the normalisations, softmax) write their
// output with non-temporal stores. An ordinary store first reads the line it writes (read for ownership), so an op that
// reads N bytes and writes N moves 3N through memory where memcpy, which streams its large copies, moves 2N; past the
// caches streaming the output saves that third. Below the threshold the output stays in cache for the next layer.
#pragma once

#include <cstdint>

namespace convscope::cpu::detail {

// 128 MiB: beyond one socket's last-level cache on the machines we measure (a 16-core slice of a server, 2 cores of
// an EPYC here), so the next layer would read it from memory anyway.
inline constexpr int64_t kStreamOutputBytes = int64_t(128) << 20;
inline bool streamOutput(int64_t elements) { return elements * int64_t(sizeof(float)) >= kStreamOutputBytes; }

} // namespace convscope::cpu::detail
