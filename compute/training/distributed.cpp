// The torchrun environment, the batch split and the gradient buckets (distributed.h). The TCP rendezvous is in
// process_group.cpp.
#include "compute/training/distributed.h"

#include "compute/error.h"

#include <cstdlib>
#include <cstring>

namespace convscope {

std::string DistributedEnv::str() const
{
    return "rank " + std::to_string(rank) + " of " + std::to_string(worldSize) + " (local rank "
        + std::to_string(localRank) + ") via " + masterAddr + ":" + std::to_string(masterPort);
}

namespace {
    const char* const kHowToStart = " (start every rank as torchrun does: RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR "
                                    "and MASTER_PORT set, or let `train --nproc-per-node N` start them)";

    int integerVar(const std::function<const char*(const char*)>& get, const char* name, bool required, int fallback)
    {
        const char* v = get(name);
        if (!v || !*v) {
            if (required)
                throw InputError(
                    std::string("--distributed: the environment variable ") + name + " is not set" + kHowToStart);
            return fallback;
        }
        char* end = nullptr;
        errno = 0;
        const long n = std::strtol(v, &end, 10);
        if (end == v || *end != '\0' || errno == ERANGE || n < 0 || n > 1'000'000)
            throw InputError(std::string("--distributed: ") + name + "=" + v + " is not a non-negative integer");
        return int(n);
    }
} // namespace

DistributedEnv parseDistributedEnv(const std::function<const char*(const char*)>& getenv)
{
    const std::function<const char*(const char*)> get
        = getenv ? getenv : [](const char* name) -> const char* { return std::getenv(name); };
    DistributedEnv e;
    e.worldSize = integerVar(get, "WORLD_SIZE", true, 1);
    e.rank = integerVar(get, "RANK", true, 0);
    e.localRank = integerVar(get, "LOCAL_RANK", true, 0);
    e.localWorldSize = integerVar(get, "LOCAL_WORLD_SIZE", false, e.worldSize);
    if (e.worldSize < 1)
        throw InputError("--distributed: WORLD_SIZE=0; it must be the number of ranks, at least 1");
    if (e.rank >= e.worldSize)
        throw InputError("--distributed: RANK=" + std::to_string(e.rank)
            + " but WORLD_SIZE=" + std::to_string(e.worldSize) + " (ranks count from 0 to WORLD_SIZE − 1)");
    if (e.localWorldSize < 1 || e.localWorldSize > e.worldSize)
        throw InputError("--distributed: LOCAL_WORLD_SIZE=" + std::to_string(e.localWorldSize)
            + " must be between 1 and WORLD_SIZE=" + std::to_string(e.worldSize));
    if (e.localRank >= e.localWorldSize)
        throw InputError("--distributed: LOCAL_RANK=" + std::to_string(e.localRank) + " but "
            + (get("LOCAL_WORLD_SIZE") ? "LOCAL_WORLD_SIZE=" : "WORLD_SIZE=") + std::to_string(e.localWorldSize)
            + " (the local rank picks this host's GPU, counted from 0)");
    const char* addr = get("MASTER_ADDR");
    if (!addr || !*addr)
        throw InputError(std::string("--distributed: the environment variable MASTER_ADDR is not set") + kHowToStart);
    e.masterAddr = addr;
    const char* port = get("MASTER_PORT");
    if (!port || !*port)
        throw InputError(std::string("--distributed: the environment variable MASTER_PORT is not set") + kHowToStart);
    e.masterPort = integerVar(get, "MASTER_PORT", true, 0);
    if (e.masterPort < 1 || e.masterPort > 65535)
        throw InputError("--distributed: MASTER_PORT=" + std::string(port) + " is not a TCP port (1 to 65535)");
    return e;
}

BatchSlice splitBatch(int64_t batch, int rank, int worldSize)
{
    if (worldSize < 1 || rank < 0 || rank >= worldSize)
        throw InputError("rank " + std::to_string(rank) + " is not one of " + std::to_string(worldSize) + " ranks");
    if (batch < worldSize || batch % worldSize != 0)
        throw InputError("the batch of " + std::to_string(batch) + " does not divide among " + std::to_string(worldSize)
            + " ranks: data parallel gives every rank an equal slice of the batch (use a batch that is a multiple of "
            + std::to_string(worldSize) + ")");
    const int64_t count = batch / worldSize;
    return { count * rank, count };
}

Tensor sliceBatch(const Tensor& t, int64_t batch, const BatchSlice& slice)
{
    if (batch < 1 || t.numel() % batch != 0 || slice.offset < 0 || slice.count < 1
        || slice.offset + slice.count > batch)
        throw InputError("a tensor of " + std::to_string(t.numel()) + " values has no rows ["
            + std::to_string(slice.offset) + ", " + std::to_string(slice.offset + slice.count) + ") of a batch of "
            + std::to_string(batch));
    const int64_t row = t.numel() / batch;
    Shape s = t.shape();
    s.n = slice.count;
    Tensor out(s);
    if (out.numel() != row * slice.count)
        throw InputError("a tensor " + t.shape().str() + " is not laid out with the batch outermost");
    std::memcpy(out.data(), t.data() + slice.offset * row, size_t(row * slice.count) * sizeof(float));
    return out;
}

std::vector<GradientBucket> assignBuckets(
    const std::vector<int64_t>& layerGradientBytes, int64_t capBytes, int64_t firstCapBytes)
{
    std::vector<GradientBucket> buckets;
    for (size_t k = layerGradientBytes.size(); k-- > 0;) {
        const int64_t bytes = layerGradientBytes[k];
        if (bytes <= 0)
            continue;
        const int64_t cap = buckets.size() == 1 ? firstCapBytes : capBytes; // the open bucket's cap
        if (buckets.empty() || (!buckets.back().layers.empty() && buckets.back().bytes + bytes > cap))
            buckets.emplace_back();
        buckets.back().layers.push_back(k);
        buckets.back().bytes += bytes;
    }
    return buckets;
}

} // namespace convscope
