// The flow both GPU training sessions share (issue 33): the cuda session on our kernels
// (kernels/cuda/training/cuda_training_session.h) and the cudnn session on cuDNN and cuBLAS
// (kernels/cudnn/training_layers.h) differ only in what runs per layer kind; everything else is here, compiled into
// kernels_common and so into each module:
//
//   prepare   (untimed) the refusals (the session's own rule per layer), every parameter, running statistic, gradient
//             and optimizer state copied to or allocated on the device once, each layer's output, output gradient and
//             gradient scratch (views — flatten, reshape, identity — read their input's buffer, and share its
//             gradient when the input has one reader), then the session plans each layer (planLayer) and the base
//             allocates the largest workspace a plan asked for (m_workspaceBytes).
//   step      the input up (once, for train's resident batch); the forward in training mode; the loss on the device
//             (loss_kernels.cuh: its gradient written in place, timed by events; the data-parallel step keeps the
//             host's computeLoss); the backward in reverse layer order with each layer's update (our SGD / Adam
//             kernel, FP32 state, skipped on the device when the loss is not finite) right after its gradients, as
//             the CPU's session; one synchronisation at the end, which reads the events, the loss and the finiteness
//             flags (the optimizer kernels flag a parameter gradient that is not finite as they read it, one kernel
//             checks the input gradient; only then is every gradient checked, to name the layer: a loss that is not
//             finite is named first, then the first flagged layer in backward order). A tensor read by several
//             layers sums their gradients (the first writes the gradient buffer, the others a scratch buffer added
//             on); a layer whose output nothing reads gets no gradient and no update.
//   phased    forwardPass / zeroGradients / backwardPass / updateParameters (training.h; gpu_training_phased.cpp): the
//             same forward, per-layer backward and optimizer kernels as step(), with the update deferred and each
//             parameter's gradient added into a sum buffer (allocated at the first zeroGradients) after every
//             backward pass; what the DCGAN loop (compute/training/gan_run.h) drives.
//
// Each phase of each layer (0 forward, 1 backward-data, 2 backward-weights, 3 update) runs between two CUDA events
// inside an NVTX range named as the CPU's ("cuda.implicit_gemm · train · L3 conv2d c1 · backward-data"). NCHW tensors
// on the device, FP32, or under mixed precision (--math fp16 / bf16) either as the cuda session takes it (FP32
// tensors, the products' operands and results rounded by the session: HalfMath::RoundedProducts) or as the cudnn
// session does, in the storage type m_storage:
//   activations, their gradients and the input in FP16 / BF16 (but a final softmax or log_softmax writes FP32, as
//   autocast runs it: m_outputType); parameters, batch norm's statistics and the
//   optimizer's state FP32; the layers that read a parameter in the storage type (storageParameters: convolutions,
//   linear) keep a storage copy (weightCopy / biasCopy) that the optimizer kernels rewrite as they update, and write
//   their parameter gradients in the storage type (gradType).
//   FP16 scales the loss as torch.cuda.amp.GradScaler: the loss gradient is multiplied by the scale (65536 at first, or
//   --option loss_scale=S),
//   the backward runs whole, every parameter gradient is checked, and only then do the updates run, with the
//   gradients divided by the scale — or, if one is not finite, change nothing (the step is skipped and reported) and
//   the scale halves; after 2000 clean steps in a row it doubles. BF16 has FP32's range and runs unscaled.
// A session derives from GpuTrainingSession<its layer struct> and supplies the per-kind work.
#pragma once

#include "compute/storage_format.h"
#include "compute/training/grad_scaler.h"
#include "compute/training/training.h"
#include "kernels/common/device_buffer.h"

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace convscope::gpu {

class DataParallel; // data_parallel.h

// One layer's device state that every GPU training session keeps; a session's layer struct derives from it and adds
// its plan (descriptors, geometries, tables).
struct TrainLayerState {
    // The session's parameters, running statistics, gradients and optimizer state, on the device.
    DeviceBuffer weight, bias, mean, var, gradWeight, gradBias;
    // Where the gradients are written: gradWeight / gradBias, or (under data parallel, any session) a window of
    // a bucket's flat buffer, so the all-reduce needs no copy. Elements of gradType.
    void *gW = nullptr, *gB = nullptr;
    DType gradType = DType::F32;
    // Data parallel in mixed precision: the bucket's FP32 windows that the half gradients are widened into before the
    // all-reduce (PyTorch DDP under autocast all-reduces the FP32 parameters' gradients); the update, the overflow
    // check and parameterGradient read these. Null otherwise.
    float *reducedW = nullptr, *reducedB = nullptr;
    const void* gradWeightRead() const { return reducedW ? static_cast<const void*>(reducedW) : gW; }
    const void* gradBiasRead() const { return reducedB ? static_cast<const void*>(reducedB) : gB; }
    DType gradReadType() const { return reducedW || reducedB ? DType::F32 : gradType; }
    // Mixed precision: the parameters in the storage type, rewritten by every update (layers with storageParameters).
    DeviceBuffer weightCopy, biasCopy;
    const void* weightIn() const { return weightCopy.get() ? weightCopy.get() : weight.get(); }
    const void* biasIn() const { return biasCopy.get() ? biasCopy.get() : bias.get(); }
    DeviceBuffer firstW, secondW, firstB, secondB; // SGD: momentum buffer in first; Adam: exp_avg, exp_avg_sq
    int64_t weightCount = 0, biasCount = 0;
    bool trainWeight = false, trainBias = false;
    bool started = false; // the optimizer has stepped (SGD's momentum buffer is set)
    // The phased step: the gradients summed over backwardPass calls since zeroGradients.
    DeviceBuffer sumW, sumB;
    bool summed = false;
    // Batch norm: the forward's batch mean and 1/std (their element type is the session's: prepareLayer allocates).
    DeviceBuffer saveMean, saveInvStd;
    DeviceBuffer
        mask; // dropout: this step's mask (0 or 1 / (1 − p)), drawn on the host; maxpool2d: its windows' argmax
    std::vector<float> hostMask;
    std::string note; // what runs, for metadata
    std::array<std::string, 4> ranges; // NVTX names of the four phases
    std::array<CudaEvent, 8> events; // start and stop of each phase
    std::array<bool, 4> timed {}; // which phases ran since the last pass began
};

class GpuTrainingSessionBase : public TrainingSession {
public:
    ~GpuTrainingSessionBase() override;

    void prepare(const Network& net, const ShapeReport& shapes, const TrainingOptions& options) final;
    // One GPU's step (gpu_training_session.cpp), or under data parallel the one with the all-reduces
    // (gpu_training_parallel.cpp).
    StepResult step(const Tensor& input, const Tensor& target, int64_t step) final;
    // Data parallel (gpu_training_parallel.cpp, data_parallel.h): built with NCCL, every GPU session takes it.
    bool dataParallel() const final;
    std::vector<BucketTiming> passBuckets() const final; // the last phased backward pass's all-reduces
    void reset() final;
    Network trainedNetwork() const final;
    Tensor parameterGradient(const ParameterRef& ref) const final;
    Tensor inputGradient() const final;
    std::vector<ParameterRef> parameters() const final;
    std::map<std::string, std::string> metadata() const final;
    // gpu_training_phased.cpp
    Tensor forwardPass(const Tensor& input, int64_t step, std::vector<LayerPhaseMs>& times) final;
    void zeroGradients() final;
    void backwardPass(const Tensor& outputGradient, int64_t step, std::vector<LayerPhaseMs>& times) final;
    bool updateParameters(int64_t step, std::vector<LayerPhaseMs>& times) final;
    // The device hand-off (training.h), between two GPU sessions of one backend, device and storage type. The tensor
    // is copied on this session's stream after an event recorded on the other's, so the other's queued work comes
    // first; both calls end synchronised (the output's download, the gradient checks), so the other may then run on.
    bool handsOffTo(const TrainingSession& other) const final;
    void forwardPassResident(const Tensor& input, int64_t step, std::vector<LayerPhaseMs>& times) final;
    Tensor forwardPassOn(const TrainingSession& producer, int64_t step, std::vector<LayerPhaseMs>& times) final;
    void backwardPassOn(const TrainingSession& consumer, int64_t step, std::vector<LayerPhaseMs>& times) final;
    Tensor lastOutput() const final;
    double lossScale() const final { return lossScaled() ? initialLossScale() : 0; }
    void setLossScale(double scale) final;
    void setGradientSync(bool sync) final { m_gradientSync = sync; }
    // gpu_training_deferred.cpp: the phased step read once (training.h). Each pass records its events from a pool
    // that grows to what one collect needs; a loss keeps the logits it read in a pooled FP32 buffer, a backward pass
    // its finiteness flags in a slot of m_passFlags, an update its skip flag; collectPasses reads them all after one
    // synchronisation.
    bool deferReads(bool on) final;
    void labelLoss(float label) final;
    void backwardPassFromLoss(int64_t step, std::vector<LayerPhaseMs>& times) final;
    std::vector<DeferredPass> collectPasses(int64_t step) final;

protected:
    // backend "cuda" or "cudnn" (the NVTX colour and the messages); the prefix is "<backend>.<algorithm>".
    GpuTrainingSessionBase(std::string backend, std::string algorithm, SessionOptions options);

    // How a session takes --math fp16 / bf16.
    enum class HalfMath {
        Refused,
        // The cudnn session: activations and their gradients in the half type, the products' parameters in storage
        // copies (PyTorch's CUDA autocast; m_storage is the half type).
        HalfStorage,
        // The cuda session: FP32 tensors; the convolutions and linear layers read their input, weight and output
        // gradient rounded to the half type and write their output and input gradient rounded (the CPU's mixed
        // precision, compute/training/mixed_products.h; roundsProducts()).
        RoundedProducts,
    };
    // For the sessions' constructors: throws UnsupportedError for a math mode other than FP32 (or TF32, or FP16 and
    // BF16 as `half` says, where the session takes them: `why` says what the other modes lack); sets m_storage and
    // m_roundsProducts.
    void requireMath(bool tf32, HalfMath half, const std::string& why);
    void openDevice();
    // Waits for queued work (not on a poisoned device): the most derived destructor calls it before any buffer goes.
    void finishQueuedWork() noexcept;

    // The session's layers (GpuTrainingSession<Layer> below).
    virtual TrainLayerState& layerState(size_t i) = 0;
    virtual const TrainLayerState& layerState(size_t i) const = 0;
    virtual void resetLayers(size_t count) = 0;

    // What each session does per layer kind.
    // Why layer i cannot train on this session (empty: it can).
    virtual std::string refusal(const Network& net, const ShapeReport& shapes, size_t i) const = 0;
    // In prepare, after layer i's parameters, gradients and optimizer state exist: what else it needs (batch norm's
    // saved statistics).
    virtual void prepareLayer(size_t /*i*/) { }
    // In prepare, after every layer's plan and before the workspace is allocated (the cudnn session under data
    // parallel: every rank takes rank 0's algorithms; dataParallelRunning() says whether this prepare runs it).
    virtual void afterPlanning() { }
    bool dataParallelRunning() const { return m_ddp != nullptr; }
    // Layer i's plan, once, every buffer allocated (geometries, tables, algorithms); raises m_workspaceBytes to what
    // it needs.
    virtual void planLayer(size_t i) = 0;
    virtual void forward(size_t i) = 0;
    // The gradient of layer k's input j into `gx` (every element written).
    virtual void backwardData(size_t k, size_t j, void* gx) = 0;
    // dW and db of layer k (not batch norm).
    virtual void backwardWeights(size_t k) = 0;
    // dγ, dβ and (gx not null) dx of batch norm k.
    virtual void batchNormBackward(size_t k, void* gx) = 0;
    // Mixed precision: does layer i read its parameters in the storage type (and write their gradients in it)?
    virtual bool storageParameters(size_t /*i*/) const { return false; }
    // Before a pass's first launch (and before planning): the libraries' handles on the session's stream.
    virtual void passStarts() { }
    // Data parallel in the phased step (the DCGAN loop across GPUs; gpu_training_parallel.cpp), as PyTorch DDP
    // all-reduces every backward(): averagesGradients() says whether the session averages the gradients across ranks;
    // then backwardPass calls passBackwardStarts before the first layer, gradientsReady(k) after each layer k (with a
    // gradient or not: the buckets launch in layer order), and, after the last one, finishAveragedPass, which calls
    // addSum(k) for every layer k of `has` once its gradients hold the ranks' average, makes the `count` finiteness
    // flags every rank's maximum (so that all ranks stop at the same pass), and waits for the ranks within the
    // collective timeout (InputError naming the step when one does not answer: never hang).
    // `fold`: the sums hold this rank's own gradients of passes run without synchronising (setGradientSync(false)).
    // Each bucket then averages, per trained layer, this pass's gradient (zero where `has` has none) plus its sum, and
    // the sum is cleared before the launch; addSum(k) then runs for every trained layer, so the sums end as the ranks'
    // average of everything since zeroGradients.
    bool averagesGradients() const;
    void passBackwardStarts();
    void gradientsReady(size_t k, const std::vector<char>& has, bool fold);
    void finishAveragedPass(const std::vector<char>& has, const std::function<void(size_t)>& addSum, int* flags,
        size_t count, int64_t step, bool fold);
    bool lastPassLocal() const { return m_lastPassLocal; } // the last backward pass did not synchronise
    // Deferred reads (collectPasses): an averaged pass does not wait for the ranks (readsDeferred()); collect first
    // waits for the last one's communication within the collective timeout, then takes its buckets' timings.
    bool readsDeferred() const { return m_deferred; }
    void awaitDeferredCommunication(int64_t step);
    std::vector<BucketTiming> averagedPassBuckets() const;
    // The communicator's abort before the derived session's buffers go: after a failed step the compute stream may
    // wait on an all-reduce that a dead rank never completes, and the abort ends it, so the destructor's
    // synchronisation cannot hang.
    void endDataParallel() noexcept;
    // The session's own metadata entries (they may replace the base's).
    virtual void extraMetadata(std::map<std::string, std::string>& /*m*/) const { }
    virtual std::string workspaceWhat() const = 0; // the workspace buffer's name in an allocation failure

    // Pieces of the step, which the data-parallel step (gpu_training_parallel.cpp) reuses.
    // Checks the input's shape, makes the device current, clears the phases' `timed` and runs passStarts.
    void beginStep(const Tensor& input);
    // The input up, the flags cleared, the forward of every layer (timed).
    void uploadAndForward(const Tensor& input, int64_t step);
    // The loss on the device (loss_kernels.cuh): its gradient written, the loss and its flag copied to pinned memory
    // for the step's one synchronisation at the end (stepFlags), its kernels between two events. The target goes up
    // once when TrainingOptions::sameInputEveryStep holds.
    void lossOnDevice(const Tensor& target);
    // FP16's step after the loss (GradScaler's): the backward, the check, the updates; r.lossScale and r.skipped.
    StepResult stepLossScaled(int64_t step, std::vector<char>& has, StepResult& r);
    // GradScaler's updates after the checks: each trained layer's, skipped on the device where the loss's flag says a
    // gradient overflowed, Adam counting the updates done; the flag copied into the step's "any" for stepFlags.
    void updatesLossScaled(const std::vector<char>& has);
    // GradScaler's bookkeeping after an FP16 step whose loss is in r (synchronised): r.lossScale and r.skipped, the
    // scale the gradients now carry, the next scale, and the optimizer's count of updates done.
    void recordLossScaledStep(StepResult& r, bool skipped);
    // Data parallel in mixed precision: layer k's half gradients widened into their FP32 windows (reducedW / B).
    void widenGradients(size_t k);
    // FP32 host values into `dst` of `type`: a copy, or (FP16 / BF16) a copy into `stage` (allocated here the first
    // time, named `what`) and a conversion on the device.
    void uploadStorage(const Tensor& host, void* dst, DType type, DeviceBuffer& stage, const char* what);
    void uploadInput(const Tensor& input); // into m_input through m_inputStage
    // Set on the device when the step's loss is not finite: the optimizer kernels then change nothing.
    const int* lossBad() const;
    int* lossFlag() const; // the same flag, to set: under FP16 a gradient that overflowed sets it too
    double* deviceLoss() const; // the step's loss on the device (a double; data parallel averages it in place)
    void prepareLoss(); // the loss's buffers (prepare)
    void clearLossFlag(); // queued at the step's start
    void readDeviceLoss(StepResult& r) const; // after the step's synchronisation: r.loss and r.lossMs
    [[noreturn]] void throwLossNotFinite(int64_t step, double loss, const char* what) const;
    // One phase of layer i between its two events, inside its NVTX range.
    void timedPhase(size_t i, int p, const std::function<void()>& work);
    // Layer k's backward-data and backward-weights phases and its finiteness flags; `has` / `inputHas` say which
    // gradients hold a value already (a second reader's is added on through a scratch buffer).
    // flagEach: check each gradient as it is made (the phased steps); step() and the data-parallel step pass false,
    // as they check them through the optimizer kernels and name the layer only when one is flagged.
    void backwardLayer(size_t k, std::vector<char>& has, char& inputHas, bool flagEach = true);
    // The optimizer's step on layer k's gradients (gW, gB).
    // skip: lossBad() in step(), null in the phased loops (their loss is the caller's).
    // nonFinite: where the optimizer kernels flag a gradient that is not finite (step()), or null.
    // fromSums: the phased step's FP32 sums (sumW, sumB) instead.
    void update(size_t k, int64_t step, const int* skip = nullptr, int* nonFinite = nullptr, bool fromSums = false);
    bool trains(size_t k) const { return layerState(k).trainWeight || layerState(k).trainBias; }
    // Synchronises; throws InputError naming the step and the first layer (in backward order) whose flag is set.
    void throwIfGradientFlagged(int64_t step) const;
    // The per-layer finiteness flags copied down after the step's work (one synchronisation).
    std::vector<int> stepFlags() const;
    void throwIfFlagged(int64_t step, const std::vector<int>& flags) const;
    // After the optimizer kernels flagged a gradient that is not finite: checks every gradient still in its buffer,
    // in backward order, and throws InputError naming the step and the first layer flagged.
    [[noreturn]] void throwFirstNonFiniteGradient(int64_t step, const std::vector<char>& has, bool inputHas);
    // Layer k's gradients (as the update reads them; fromSums: the phased step's FP32 sums) into *flag.
    void flagParameterGradients(size_t k, int* flag, bool fromSums = false);
    void readTimes(std::vector<LayerPhaseMs>& times) const; // the phases timed since `timed` was cleared

    const void* in(size_t i, size_t j) const; // layer i's j-th input (the network's input or an earlier output)
    size_t storageBytes(int64_t count) const { return size_t(count) * dtypeBytes(m_storage); }
    bool mixed() const { return m_storage != DType::F32; } // half storage (HalfMath::HalfStorage)
    // HalfMath::RoundedProducts in fp16 or bf16: the session rounds its products' tensors (FP32 storage).
    bool roundsProducts() const { return m_roundsProducts; }
    // FP16 scales the loss (m_scaler; its scale is 1 otherwise), whichever way the session takes it.
    bool lossScaled() const { return m_options.math == MathMode::FP16; }
    double initialLossScale() const; // 65536, or --option loss_scale=S; 1 without loss scaling
    // A device tensor of the storage type (or gradType) as FP32 on the host, multiplied by `factor`.
    Tensor downloadAs(const void* src, DType type, const Shape& shape, float factor) const;
    // The parameters' storage copies from the FP32 masters (prepare, reset).
    void refreshParameterCopies();
    void upload(DeviceBuffer& dst, const std::shared_ptr<const Tensor>& src, const char* what);
    std::unique_ptr<Tensor> download(const DeviceBuffer& src, const Shape& shape) const;
    void makeCurrent() const;
    size_t layerCount() const { return m_net.layers.size(); }

    std::string m_backend, m_algorithm, m_prefix; // "cuda", "implicit_gemm", "cuda.implicit_gemm"
    SessionOptions m_options;
    int m_device = 0;
    std::unique_ptr<CudaStream> m_stream;
    Network m_net, m_initial;
    ShapeReport m_shapes;
    TrainingOptions m_train;
    std::vector<DeviceBuffer> m_outBuf, m_gradBuf, m_scratchBuf; // owned storage (empty for views)
    // Layer i's output, output gradient and scratch (views resolved), elements of m_storage.
    std::vector<void*> m_out, m_grad, m_scratch;
    DType m_storage = DType::F32; // the activations' and their gradients' type (mixed precision: F16 or BF16)
    bool m_roundsProducts = false; // HalfMath::RoundedProducts in fp16 / bf16 (m_storage stays F32)
    // The network's output and its gradient: m_storage, but FP32 under mixed precision when the last layer is on
    // autocast's FP32 list (softmax, log_softmax: autocast runs them on an FP32 copy of their input and the loss reads
    // their FP32 output). That layer then reads a half input and writes FP32 (outputInFp32).
    DType m_outputType = DType::F32;
    bool outputInFp32(size_t i) const { return i + 1 == layerCount() && mixed() && m_outputType == DType::F32; }
    // FP16: GradScaler's scale, which the loss gradient is multiplied by, and its rule after step(); in the phased step
    // the caller's scaler sets it (setLossScale) and the session never changes it. 1 without loss scaling.
    GradScaler m_scaler { 1.0 };
    double m_stepScale = 1; // the scale the gradients in their buffers carry (the last step's)
    int64_t m_updatesDone = 0; // FP16: the optimizer steps taken (skipped steps excluded; Adam's t)
    DeviceBuffer m_inputStage; // mixed precision: the FP32 input, converted on the device into m_input
    DeviceBuffer m_gradStage; // mixed precision, the phased step: the FP32 output gradient, converted likewise
    mutable DeviceBuffer m_downloadStage; // downloadAs' FP32 copy of a converted or scaled tensor (grows, never freed)
    std::vector<int> m_readers;
    std::vector<char> m_gradAlias; // layer i's gradient is its source's buffer (a view with one reader)
    DeviceBuffer m_input, m_inputGrad, m_inputScratch, m_workspace, m_flags;
    bool m_inputResident = false; // m_input holds the input already (TrainingOptions::sameInputEveryStep)
    size_t m_workspaceBytes = 0;
    Tensor m_hostOutput, m_hostGrad;
    // The device loss: the target, the partial sums then the loss (a double) then its flag (an int), the loss and
    // its flag copied down (pinned), the loss kernels' events.
    DeviceBuffer m_target, m_lossScratch;
    PinnedBuffer m_lossHost;
    CudaEvent m_lossStart, m_lossStop;
    int64_t m_lossParts = 0;
    bool m_targetResident = false;
    bool m_inputHas = false;
    // Data parallel in the phased step (setGradientSync): whether the next backward pass synchronises, whether the sums
    // hold unsynchronised gradients (cleared by zeroGradients and by a synchronised pass), whether the last pass was
    // one of those (passBuckets is then empty).
    bool m_gradientSync = true, m_sumsLocal = false, m_lastPassLocal = false;
    // Deferred reads: the calls since the last collect, in order; the pools they draw from.
    struct PendingPass {
        DeferredPass::Kind kind = DeferredPass::Kind::Forward;
        std::vector<std::array<size_t, 3>> timed; // layer, phase, first of its two events in m_eventPool
        size_t logits = 0, lossEvents = 0; // Loss: its buffer in m_logitPool, its two events
        size_t flagSlot = SIZE_MAX; // Backward without loss scaling, Update: its flags in m_passFlags
        bool averaged = false; // Backward: averaged across the ranks
    };
    bool m_deferred = false;
    std::vector<PendingPass> m_pending;
    std::vector<CudaEvent> m_eventPool;
    size_t m_eventsUsed = 0;
    std::vector<DeviceBuffer> m_logitPool;
    size_t m_logitsUsed = 0;
    DeviceBuffer m_passFlags; // slots of layerCount() + 1 ints
    size_t m_flagSlotsUsed = 0;
    std::vector<std::pair<float, DeviceBuffer>> m_labels; // labelLoss's targets, by value
    CudaEvent m_copyDone; // copyFromPeer: after the copy on this stream, which the producer's stream then waits for
    int64_t m_step = 0; // the step being run (dropout's seed)
    bool m_prepared = false;

private:
    StepResult stepOnOneGpu(const Tensor& input, const Tensor& target, int64_t step); // gpu_training_session.cpp
    // gpu_training_parallel.cpp. The shared step with the all-reduces: each bucket launched as soon as the backward has
    // written its gradients, the updates after the averages; the flags and the loss all-reduced so every rank reaches
    // the same verdict.
    StepResult stepDataParallel(const Tensor& input, const Tensor& target, int64_t step);
    void setUpDataParallel(); // prepare: the communicator (once) and the buckets with a group of 2+ ranks, else none
    void prepareDataParallel(); // the buckets, the gradients moved into their flat buffers (or widened into them)
    // After layer k's backward: its half gradients widened into the bucket (mixed precision), then the buckets it
    // completes launched; with `has` (the phased step's fold) each bucket's layers first add their sums into their
    // windows (zeroed where `has` has no gradient) and clear them.
    void bucketsReadyAfter(size_t k, const std::vector<char>* has = nullptr);
    void foldSumsInto(size_t bucket, const std::vector<char>& has);
    void waitAllBuckets(); // the compute stream waits for every bucket's average
    // After the backward: `work` on each trained layer of `has` (its update, or the phased step's sum), each after the
    // compute stream waits for its bucket's average.
    void afterEachBucket(const std::vector<char>& has, const std::function<void(size_t)>& work);
    std::unique_ptr<DataParallel> m_ddp; // data parallel only
    const ProcessGroup* m_ddpGroup = nullptr; // the group m_ddp was made for
    std::vector<std::vector<size_t>> m_bucketsAfter; // layer k → the buckets its backward completes

    void flagGradients(size_t k, const std::vector<char>& has, bool inputHas);
    void beginPass(); // the phased step's: prepared, current device, passStarts, `timed` cleared
    // The phased forward once the input is in m_input, and the backward once the output gradient is in place.
    void phasedForward(int64_t step, std::vector<LayerPhaseMs>& times);
    void phasedBackward(int64_t step, std::vector<LayerPhaseMs>& times);
    void ensureSums(); // zeroGradients when a trained parameter has no sum buffer yet
    // Deferred reads: the next two events of the pool (grown as needed), recorded by the caller; a new pending pass.
    size_t takeEvents();
    PendingPass& pendingPass(DeferredPass::Kind kind);
    size_t takeFlagSlot(); // a slot of m_passFlags (grown between collects only)
    int* flagSlot(size_t slot) const;
    // The other session of a hand-off, checked (handsOffTo), and `count` elements of its tensor at `src` (of srcType)
    // copied or converted into `dst` (of dstType) on this stream after the other's queued work.
    const GpuTrainingSessionBase& handOffPeer(const TrainingSession& other, const char* what) const;
    void copyFromPeer(
        const GpuTrainingSessionBase& peer, const void* src, DType srcType, void* dst, DType dstType, int64_t count);
    mutable CudaEvent m_handOff; // recorded on this stream when a peer reads this session's tensor
};

// The base with the session's layer struct (derived from TrainLayerState) in m_layers.
template <class LayerT> class GpuTrainingSession : public GpuTrainingSessionBase {
protected:
    using GpuTrainingSessionBase::GpuTrainingSessionBase;
    // The queued work ends before m_layers' buffers are freed (the base's destructor runs after they are).
    ~GpuTrainingSession() override
    {
        endDataParallel();
        finishQueuedWork();
    }

    TrainLayerState& layerState(size_t i) final { return m_layers[i]; }
    const TrainLayerState& layerState(size_t i) const final { return m_layers[i]; }
    void resetLayers(size_t count) final
    {
        m_layers.clear();
        m_layers.resize(count);
    }

    std::vector<LayerT> m_layers;
};

} // namespace convscope::gpu
