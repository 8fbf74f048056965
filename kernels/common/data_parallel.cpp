// DataParallel (data_parallel.h): NCCL's communicator, the communication stream and the buckets' all-reduces.
#include "kernels/common/data_parallel.h"

#include "compute/error.h"
#include "kernels/common/cuda_check.h"
#include "kernels/common/device_info.h"
#include "kernels/common/training_kernels.cuh"

#include "convscope_config.h"

#if CONVSCOPE_WITH_NCCL
#include <nccl.h>
#endif

#include <algorithm>
#include <chrono>
#include <sstream>
#include <type_traits>

#include <cstdlib>
#include <dlfcn.h>
#include <thread>

namespace convscope::gpu {

namespace {
    using Clock = std::chrono::steady_clock;
    std::string mb(int64_t bytes)
    {
        const std::string t = std::to_string(double(bytes) / 1e6);
        return t.substr(0, t.find('.') + 2);
    }
} // namespace

#if !CONVSCOPE_WITH_NCCL

DataParallel::DataParallel(ProcessGroup& group, int, double)
    : m_group(group)
{
    throw UnsupportedError(std::string("data-parallel training is unavailable: ") + CONVSCOPE_NCCL_WHY);
}
DataParallel::~DataParallel() = default;
void DataParallel::check(int, const char*) { }
void DataParallel::setBuckets(std::vector<GradientBucket>) { }
void DataParallel::backwardStarts(cudaStream_t) { }
void DataParallel::launch(size_t, cudaStream_t) { }
void DataParallel::waitBucket(size_t, cudaStream_t) { }
void DataParallel::backwardEnds(cudaStream_t) { }
void DataParallel::allReduceMax(int*, size_t, cudaStream_t) { }
double DataParallel::finishStep(int*, size_t, double*, cudaStream_t, int64_t) { return 0; }
void DataParallel::finishPass(int*, size_t, cudaStream_t, int64_t, bool) { }
void DataParallel::awaitCommunication(int64_t) { }
std::vector<BucketTiming> DataParallel::timings() const { return {}; }
double DataParallel::backwardMs() const { return -1; }
std::string DataParallel::description() const { return {}; }

#else

namespace {
    // NCCL is loaded when data parallel first needs it, not linked: the modules (and every single-GPU use of
    // them) load on a machine without libnccl.so.2, and only `train --distributed` says that NCCL is missing.
    struct NcclApi {
        decltype(&::ncclAllReduce) ncclAllReduce = nullptr;
        decltype(&::ncclCommAbort) ncclCommAbort = nullptr;
        decltype(&::ncclCommDestroy) ncclCommDestroy = nullptr;
        decltype(&::ncclCommFinalize) ncclCommFinalize = nullptr;
        decltype(&::ncclCommGetAsyncError) ncclCommGetAsyncError = nullptr;
        decltype(&::ncclCommInitRankConfig) ncclCommInitRankConfig = nullptr;
        decltype(&::ncclGetErrorString) ncclGetErrorString = nullptr;
        decltype(&::ncclGetLastError) ncclGetLastError = nullptr;
        decltype(&::ncclGetUniqueId) ncclGetUniqueId = nullptr;
        decltype(&::ncclGetVersion) ncclGetVersion = nullptr;
        decltype(&::ncclGroupEnd) ncclGroupEnd = nullptr;
        decltype(&::ncclGroupStart) ncclGroupStart = nullptr;
    };

    const NcclApi& api()
    {
        static std::string error;
        static const NcclApi table = [] {
            NcclApi a;
            void* lib = ::dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
            if (!lib) {
                const char* why = ::dlerror();
                error = std::string("libnccl.so.2 cannot be loaded (") + (why ? why : "?")
                    + "); put NCCL's lib folder (e.g. the PyTorch wheel's nvidia/nccl/lib) on LD_LIBRARY_PATH";
                return a;
            }
            const auto load = [&](auto& fn, const char* name) {
                fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(lib, name));
                if (!fn && error.empty())
                    error = std::string("libnccl.so.2 has no ") + name + " (NCCL 2.14 or newer is needed)";
            };
            load(a.ncclAllReduce, "ncclAllReduce");
            load(a.ncclCommAbort, "ncclCommAbort");
            load(a.ncclCommDestroy, "ncclCommDestroy");
            load(a.ncclCommFinalize, "ncclCommFinalize");
            load(a.ncclCommGetAsyncError, "ncclCommGetAsyncError");
            load(a.ncclCommInitRankConfig, "ncclCommInitRankConfig");
            load(a.ncclGetErrorString, "ncclGetErrorString");
            load(a.ncclGetLastError, "ncclGetLastError");
            load(a.ncclGetUniqueId, "ncclGetUniqueId");
            load(a.ncclGetVersion, "ncclGetVersion");
            load(a.ncclGroupEnd, "ncclGroupEnd");
            load(a.ncclGroupStart, "ncclGroupStart");
            return a;
        }();
        if (!error.empty())
            throw UnsupportedError("data-parallel training is unavailable: " + error);
        return table;
    }
} // namespace

void DataParallel::check(int code, const char* what)
{
    ncclResult_t r = ncclResult_t(code);
    const auto deadline = Clock::now() + std::chrono::duration<double>(m_timeout);
    while (r == ncclInProgress) {
        if (Clock::now() > deadline) {
            m_failed = true;
            throw InputError(m_group.env().str() + ": " + what + " did not finish within "
                + std::to_string(int(m_timeout)) + " s; did another rank fail or never start?");
        }
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        if (api().ncclCommGetAsyncError(m_comm, &r) != ncclSuccess)
            break;
    }
    if (r != ncclSuccess) {
        m_failed = true;
        const char* last = m_comm ? api().ncclGetLastError(m_comm) : nullptr;
        throw Error(m_group.env().str() + ": " + what + " failed: " + api().ncclGetErrorString(r)
            + (last && *last ? std::string(" (") + last + ")" : std::string()));
    }
}

DataParallel::DataParallel(ProcessGroup& group, int device, double timeoutSeconds)
    : m_group(group)
    , m_device(device)
    , m_timeout(timeoutSeconds)
{
    // The GPU machines' documentation requires NVLink multicast (NVLS) off; a value the user set wins.
    ::setenv("NCCL_NVLS_ENABLE", "0", 0);
    api().ncclGetVersion(&m_version);
    ncclUniqueId id {};
    std::string bytes(sizeof id.internal, '\0');
    if (group.rank() == 0) {
        const ncclResult_t r = api().ncclGetUniqueId(&id);
        if (r != ncclSuccess)
            throw Error(group.env().str() + ": ncclGetUniqueId failed: " + api().ncclGetErrorString(r));
        bytes.assign(id.internal, sizeof id.internal);
    }
    group.broadcast(bytes); // the TCP rendezvous: rank 0's id to every rank
    if (bytes.size() != sizeof id.internal)
        throw Error(group.env().str() + ": NCCL's unique id from rank 0 has " + std::to_string(bytes.size())
            + " bytes, not " + std::to_string(sizeof id.internal) + " (a different NCCL on that rank?)");
    std::copy(bytes.begin(), bytes.end(), id.internal);
    CONVSCOPE_CUDA_CHECK(cudaSetDevice(device));
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0; // so that a rank that never comes cannot hang this one: polled with the timeout
    ncclComm_t comm = nullptr;
    const ncclResult_t r = api().ncclCommInitRankConfig(&comm, group.worldSize(), id, group.rank(), &config);
    m_comm = comm;
    try {
        check(r, "ncclCommInitRank");
    } catch (...) {
        if (m_comm)
            api().ncclCommAbort(m_comm);
        m_comm = nullptr;
        throw;
    }
    m_stream = std::make_unique<CudaStream>();
    m_hostLoss.reserve(sizeof(double));
}

DataParallel::~DataParallel()
{
    if (!m_comm)
        return;
    if (m_failed || isPoisoned()) {
        api().ncclCommAbort(m_comm);
        return;
    }
    // A step that stopped half-way (an exception on this rank) may leave an all-reduce that the other ranks never
    // join: wait for the communication stream within the timeout, else abort.
    const auto deadline = Clock::now() + std::chrono::duration<double>(m_timeout);
    while (cudaStreamQuery(m_stream->get()) == cudaErrorNotReady) {
        if (Clock::now() > deadline) {
            api().ncclCommAbort(m_comm);
            return;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    ncclResult_t r = api().ncclCommFinalize(m_comm);
    while (r == ncclInProgress && Clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        if (api().ncclCommGetAsyncError(m_comm, &r) != ncclSuccess)
            break;
    }
    if (r == ncclSuccess)
        api().ncclCommDestroy(m_comm);
    else
        api().ncclCommAbort(m_comm);
}

void DataParallel::setBuckets(std::vector<GradientBucket> plans)
{
    m_plans = std::move(plans);
    m_buckets.clear();
    m_buckets.resize(m_plans.size());
    for (size_t b = 0; b < m_plans.size(); ++b) {
        m_buckets[b].flat = DeviceBuffer(size_t(m_plans[b].bytes), "train: a gradient bucket");
        // Zeros: the padding between parameters, and a layer no loss reaches, are averaged too but never written.
        CONVSCOPE_CUDA_CHECK(cudaMemset(m_buckets[b].flat.get(), 0, size_t(m_plans[b].bytes)));
    }
}

void DataParallel::backwardStarts(cudaStream_t compute) { m_bwdStart.record(compute); }

void DataParallel::launch(size_t b, cudaStream_t compute)
{
    Bucket& k = m_buckets.at(b);
    k.ready.record(compute);
    CONVSCOPE_CUDA_CHECK(cudaStreamWaitEvent(m_stream->get(), k.ready.get(), 0));
    k.start.record(m_stream->get());
    check(api().ncclAllReduce(k.flat.get(), k.flat.get(), size_t(m_plans[b].bytes) / sizeof(float), ncclFloat, ncclAvg,
              m_comm, m_stream->get()),
        "ncclAllReduce of a gradient bucket");
    k.end.record(m_stream->get());
}

void DataParallel::waitBucket(size_t b, cudaStream_t compute)
{
    CONVSCOPE_CUDA_CHECK(cudaStreamWaitEvent(compute, m_buckets.at(b).end.get(), 0));
}

void DataParallel::backwardEnds(cudaStream_t compute) { m_bwdEnd.record(compute); }

void DataParallel::allReduceMax(int* values, size_t count, cudaStream_t compute)
{
    const cudaStream_t comm = m_stream->get();
    m_computeDone.record(compute);
    CONVSCOPE_CUDA_CHECK(cudaStreamWaitEvent(comm, m_computeDone.get(), 0));
    check(api().ncclAllReduce(values, values, count, ncclInt32, ncclMax, m_comm, comm), "ncclAllReduce of the flags");
    m_maxDone.record(comm);
    CONVSCOPE_CUDA_CHECK(cudaStreamWaitEvent(compute, m_maxDone.get(), 0));
}

double DataParallel::finishStep(int* flags, size_t count, double* loss, cudaStream_t compute, int64_t step)
{
    const cudaStream_t comm = m_stream->get();
    m_computeDone.record(compute);
    CONVSCOPE_CUDA_CHECK(cudaStreamWaitEvent(comm, m_computeDone.get(), 0));
    check(api().ncclGroupStart(), "ncclGroupStart");
    check(api().ncclAllReduce(flags, flags, count, ncclInt32, ncclMax, m_comm, comm), "ncclAllReduce of the flags");
    check(api().ncclAllReduce(loss, loss, 1, ncclFloat64, ncclAvg, m_comm, comm), "ncclAllReduce of the loss");
    check(api().ncclGroupEnd(), "the all-reduce of the finiteness flags and the loss");
    // Pinned host memory: a pageable device-to-host copy would block here, before the polling below.
    double* host = reinterpret_cast<double*>(m_hostLoss.floats());
    CONVSCOPE_CUDA_CHECK(cudaMemcpyAsync(host, loss, sizeof(double), cudaMemcpyDeviceToHost, comm));
    m_commDone.record(comm);
    awaitCommunication(step);
    CONVSCOPE_CUDA_CHECK(cudaStreamSynchronize(compute));
    return host[0];
}

void DataParallel::finishPass(int* flags, size_t count, cudaStream_t compute, int64_t step, bool wait)
{
    allReduceMax(flags, count, compute); // after the pass's work on `compute`, which waited for every bucket
    m_commDone.record(m_stream->get());
    if (wait)
        awaitCommunication(step);
}

void DataParallel::awaitCommunication(int64_t step)
{
    // Poll rather than block: a rank that failed leaves the others' all-reduce waiting for ever.
    const auto deadline = Clock::now() + std::chrono::duration<double>(m_timeout);
    for (;;) {
        const cudaError_t e = cudaEventQuery(m_commDone.get());
        if (e == cudaSuccess)
            return;
        if (e != cudaErrorNotReady)
            CONVSCOPE_CUDA_CHECK(e);
        ncclResult_t async = ncclSuccess;
        api().ncclCommGetAsyncError(m_comm, &async);
        if (async != ncclSuccess && async != ncclInProgress)
            check(async, "a step's all-reduce");
        if (Clock::now() > deadline) {
            m_failed = true;
            throw InputError(m_group.env().str() + ": step " + std::to_string(step)
                + ": the gradients' all-reduce did not finish within " + std::to_string(int(m_timeout))
                + " s; did another rank fail?");
        }
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
}

std::vector<BucketTiming> DataParallel::timings() const
{
    const double span = elapsedMs(m_bwdStart, m_bwdEnd);
    std::vector<BucketTiming> out;
    for (size_t b = 0; b < m_plans.size(); ++b) {
        BucketTiming t;
        t.firstLayer = m_plans[b].layers.front();
        t.lastLayer = m_plans[b].layers.back();
        t.bytes = m_plans[b].bytes;
        t.startMs = elapsedMs(m_bwdStart, m_buckets[b].start);
        const double end = elapsedMs(m_bwdStart, m_buckets[b].end);
        t.allReduceMs = end - t.startMs;
        t.hiddenMs = std::max(0.0, std::min(end, span) - std::max(t.startMs, 0.0));
        out.push_back(t);
    }
    return out;
}

double DataParallel::backwardMs() const { return elapsedMs(m_bwdStart, m_bwdEnd); }

std::string DataParallel::description() const
{
    std::string s = "NCCL " + std::to_string(m_version / 10000) + "." + std::to_string(m_version / 100 % 100) + "."
        + std::to_string(m_version % 100) + ", " + std::to_string(m_group.worldSize()) + " ranks, "
        + std::to_string(m_plans.size()) + " buckets (";
    for (size_t b = 0; b < m_plans.size(); ++b)
        s += (b ? " / " : "") + mb(m_plans[b].bytes);
    return s + " MB), ncclAvg on a stream of its own, NCCL_NVLS_ENABLE="
        + (std::getenv("NCCL_NVLS_ENABLE") ? std::getenv("NCCL_NVLS_ENABLE") : "unset");
}

#endif

} // namespace convscope::gpu
