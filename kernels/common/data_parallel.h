// Data parallel for the GPU training sessions (issue 33; gpu_training_session.h runs it for cudnn and for our
// kernels alike): an NCCL communicator over the ranks of a ProcessGroup (compute/training/distributed.h, whose TCP
// rendezvous carries NCCL's unique id from rank 0), a communication stream, and the gradient buckets (DDP's: reverse
// layer order, ~25 MiB, a 1 MiB first bucket), each a flat device buffer that the bucket's layers' gradients live in,
// so its all-reduce needs no copy.
//
// A step: the backward runs on the compute stream as on one GPU; right after the last layer of a bucket has its
// gradients, launch() records an event there, the communication stream waits for it and averages the bucket across
// the ranks (ncclAllReduce, ncclAvg) while the compute stream goes on with the backward. Then each layer's update
// waits for its bucket (waitBucket). finishStep() reduces the finiteness flags (max) and the losses (mean) on the
// device and waits for everything with a timeout: a rank that stops answering (another rank failed) aborts the
// communicator with a message instead of hanging. Built without NCCL, or where libnccl.so.2 cannot be loaded (it is
// loaded with dlopen on first use, not linked), the constructor throws UnsupportedError saying why.
#pragma once

#include "compute/training/distributed.h"
#include "compute/training/training.h"
#include "kernels/common/device_buffer.h"

#include <cuda_runtime.h>

#include <memory>
#include <string>
#include <vector>

struct ncclComm; // nccl.h's ncclComm_t is a ncclComm*

namespace convscope::gpu {

class DataParallel {
public:
    // NCCL_NVLS_ENABLE=0 unless set (the GPU machines require NVLink multicast off); rank 0 makes the unique id and
    // broadcasts it over `group`; ncclCommInitRankConfig non-blocking, polled until `timeoutSeconds`.
    DataParallel(ProcessGroup& group, int device, double timeoutSeconds);
    ~DataParallel();
    DataParallel(const DataParallel&) = delete;
    DataParallel& operator=(const DataParallel&) = delete;

    // The buckets and their flat buffers (bytes as assignBuckets counted them).
    void setBuckets(std::vector<GradientBucket> plans);
    const std::vector<GradientBucket>& plans() const { return m_plans; }
    float* bucketData(size_t b) const { return m_buckets.at(b).flat.floats(); }

    void backwardStarts(cudaStream_t compute); // before the first backward op of a step
    void launch(size_t b, cudaStream_t compute); // bucket b's gradients are all written on `compute`
    void waitBucket(size_t b, cudaStream_t compute); // `compute` waits for bucket b's average
    // `count` ints on the device become every rank's maximum, in place, before `compute` goes on (FP16's overflow
    // flag under GradScaler, so that every rank skips the same steps).
    void allReduceMax(int* values, size_t count, cudaStream_t compute);
    void backwardEnds(cudaStream_t compute); // after the last backward op (before the updates)
    // After the updates: the flags (ints on the device) become every rank's maximum, the loss (a double on the
    // device) the ranks' mean, in place; returns the mean after waiting for both streams within the timeout. Throws
    // InputError naming the step on a timeout.
    double finishStep(int* flags, size_t count, double* loss, cudaStream_t compute, int64_t step);
    // The phased step's end of a backward pass (after the compute stream waited for every bucket): the flags become
    // every rank's maximum, and the host waits for the communication within the timeout (InputError as finishStep).
    // wait false (deferred reads): the host does not wait here; awaitCommunication does, later.
    void finishPass(int* flags, size_t count, cudaStream_t compute, int64_t step, bool wait = true);
    void awaitCommunication(int64_t step); // polls m_commDone until the timeout (then aborts, InputError)
    // The last step's (or pass's) bucket timings and backward span (events read after finishStep or finishPass).
    std::vector<BucketTiming> timings() const;
    double backwardMs() const;
    std::string description() const; // "NCCL 2.28.9, 2 ranks, 3 buckets (1.0 / 25.1 / 18.6 MB)"

private:
    void check(int result, const char* what); // an ncclResult_t; polls ncclInProgress (non-blocking communicator)
    struct Bucket {
        DeviceBuffer flat;
        CudaEvent ready, start, end;
    };
    ProcessGroup& m_group;
    int m_device = 0;
    double m_timeout = 60;
    ncclComm* m_comm = nullptr;
    bool m_failed = false;
    std::unique_ptr<CudaStream> m_stream;
    std::vector<GradientBucket> m_plans;
    std::vector<Bucket> m_buckets;
    CudaEvent m_bwdStart, m_bwdEnd, m_computeDone, m_commDone, m_maxDone;
    PinnedBuffer m_hostLoss; // the ranks' mean loss
    int m_version = 0;
};

} // namespace convscope::gpu
