// Data-parallel training (issue 33), the host side that needs no GPU: the torchrun environment, the batch split
// across ranks, the gradient buckets, the TCP rendezvous that carries NCCL's unique id from rank 0 to the others
// (and the ranks' timings back to rank 0 for the merged report). The all-reduce itself is the cudnn training
// session's (kernels/cudnn/training_distributed.cpp, NCCL); docs/ARCHITECTURE.md §10 has the whole picture.
#pragma once

#include "compute/tensor.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace convscope {

// One process per GPU, started as torchrun starts them: RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT
// in the environment (LOCAL_WORLD_SIZE optional), so the same binary runs across hosts.
struct DistributedEnv {
    int rank = 0;
    int worldSize = 1;
    int localRank = 0;
    int localWorldSize = 1; // LOCAL_WORLD_SIZE, or WORLD_SIZE when it is not set
    std::string masterAddr;
    int masterPort = 0;
    std::string str() const; // "rank 1 of 2 (local rank 1) via 127.0.0.1:29500"
};

// Reads the variables through `getenv` (std::getenv by default; tests pass their own). Throws InputError naming the
// variable that is missing or wrong (not an integer, RANK outside [0, WORLD_SIZE), a port outside 1..65535, ...).
DistributedEnv parseDistributedEnv(const std::function<const char*(const char*)>& getenv = nullptr);

// The rank's slice of a batch of `batch` samples: rows [offset, offset + count). Throws InputError when the batch
// does not divide evenly among the ranks (every rank must take the same number of samples, so that the average of
// the ranks' mean gradients is the whole batch's mean gradient).
struct BatchSlice {
    int64_t offset = 0, count = 0;
};
BatchSlice splitBatch(int64_t batch, int rank, int worldSize);
// Rows [slice.offset, slice.offset + slice.count) of a tensor whose outermost axis (N) has `batch` rows; the result
// keeps the other axes (a [N, 1] target of class indices gives [count, 1]).
Tensor sliceBatch(const Tensor& t, int64_t batch, const BatchSlice& slice);

// Gradient buckets as PyTorch DDP makes them: layers in reverse order (the order their gradients become ready in the
// backward), packed until a bucket would exceed its cap; the first bucket's cap is small (DDP's 1 MiB first bucket)
// so that the first all-reduce starts early; the others take `capBytes` (DDP's bucket_cap_mb, 25 MiB). A layer is
// never split. Layers with no gradient bytes are left out.
struct GradientBucket {
    std::vector<size_t> layers; // in backward order (descending layer index)
    int64_t bytes = 0;
    size_t readyAfter() const { return layers.back(); } // the last layer whose backward fills it
};
constexpr int64_t kFirstBucketBytes = int64_t(1) << 20;
constexpr int64_t kBucketCapBytes = int64_t(25) << 20;
std::vector<GradientBucket> assignBuckets(const std::vector<int64_t>& layerGradientBytes,
    int64_t capBytes = kBucketCapBytes, int64_t firstCapBytes = kFirstBucketBytes);

// A star of TCP connections between rank 0 (listening at MASTER_PORT) and every other rank (connecting to
// MASTER_ADDR:MASTER_PORT), the rendezvous torchrun's store gives: small messages only (NCCL's unique id, the ranks'
// timings). Every wait is bounded: a rank that cannot reach the others, or a peer that stops answering, fails with
// an InputError naming the address and the seconds waited, never hangs.
class ProcessGroup {
public:
    // Rank 0 listens and waits for the WORLD_SIZE − 1 others; the others connect, retrying until `timeoutSeconds`.
    static std::unique_ptr<ProcessGroup> rendezvous(const DistributedEnv& env, double timeoutSeconds);
    ~ProcessGroup();
    ProcessGroup(const ProcessGroup&) = delete;
    ProcessGroup& operator=(const ProcessGroup&) = delete;

    int rank() const { return m_env.rank; }
    int worldSize() const { return m_env.worldSize; }
    const DistributedEnv& env() const { return m_env; }
    // Rank 0's `bytes` to every rank (the others' argument is replaced by rank 0's).
    void broadcast(std::string& bytes);
    // Every rank's `bytes` on rank 0, in rank order (rank 0's own first); the others get an empty vector.
    std::vector<std::string> gather(const std::string& bytes);
    // Every rank must pass the same `value` (what it is about to run, e.g. the network, batch, steps and
    // selections): otherwise every rank throws the same InputError naming the first rank that differs, instead of
    // the ranks' collectives mismatching later.
    void requireSame(const std::string& value, const std::string& what);

private:
    ProcessGroup(DistributedEnv env, double timeoutSeconds);
    void sendAll(int fd, const std::string& bytes, const std::string& peer);
    std::string recvAll(int fd, const std::string& peer);
    DistributedEnv m_env;
    double m_timeout = 60;
    std::vector<int> m_fds; // rank 0: the socket of rank r at [r] (its own −1); the others: rank 0's at [0]
};

} // namespace convscope
