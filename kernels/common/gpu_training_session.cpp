// The GPU training sessions' shared flow (gpu_training_session.h): prepare, the step, the phases' timing and flags,
// reset and the host copies. The per-kind work is the session's (planLayer, forward, backwardData, ...).
#include "kernels/common/gpu_training_session.h"
#include "kernels/common/data_parallel.h"

#include "compute/error.h"
#include "compute/layer_kinds.h"
#include "compute/nvtx.h"
#include "kernels/common/cuda_check.h"
#include "kernels/common/device_info.h"
#include "kernels/common/training_kernels.cuh"

#include <algorithm>
#include <cmath>

namespace convscope::gpu {

namespace {
    size_t floatBytes(int64_t count) { return size_t(count) * sizeof(float); }
} // namespace

GpuTrainingSessionBase::GpuTrainingSessionBase(std::string backend, std::string algorithm, SessionOptions options)
    : m_backend(std::move(backend))
    , m_algorithm(std::move(algorithm))
    , m_prefix(m_backend + "." + m_algorithm)
    , m_options(std::move(options))
{
}

GpuTrainingSessionBase::~GpuTrainingSessionBase() { finishQueuedWork(); }

void GpuTrainingSessionBase::finishQueuedWork() noexcept
{
    // Queued work must finish before the buffers it uses are freed.
    if (m_stream && !isPoisoned())
        (void)cudaStreamSynchronize(m_stream->get());
}

void GpuTrainingSessionBase::requireMath(bool tf32, HalfMath half, const std::string& why)
{
    const MathMode m = m_options.math;
    const bool halfMode = m == MathMode::FP16 || m == MathMode::BF16;
    if (m != MathMode::FP32 && !(tf32 && m == MathMode::TF32) && !(half != HalfMath::Refused && halfMode))
        throw UnsupportedError(
            m_prefix + ": training in " + mathModeName(m) + " is unsupported on " + m_backend + " (" + why + ")");
    const bool storage = halfMode && half == HalfMath::HalfStorage;
    m_storage = !storage ? DType::F32 : m == MathMode::FP16 ? DType::F16 : DType::BF16;
    m_roundsProducts = halfMode && half == HalfMath::RoundedProducts;
}

void GpuTrainingSessionBase::openDevice()
{
    requireUsable();
    m_device = selectDevice();
    m_stream = std::make_unique<CudaStream>();
}

void GpuTrainingSessionBase::makeCurrent() const { CONVSCOPE_CUDA_CHECK(cudaSetDevice(m_device)); }

void GpuTrainingSessionBase::upload(DeviceBuffer& dst, const std::shared_ptr<const Tensor>& src, const char* what)
{
    if (!src)
        return;
    if (!dst.get())
        dst = DeviceBuffer(floatBytes(src->numel()), what);
    CONVSCOPE_CUDA_CHECK(
        cudaMemcpyAsync(dst.get(), src->data(), floatBytes(src->numel()), cudaMemcpyHostToDevice, m_stream->get()));
}

const void* GpuTrainingSessionBase::in(size_t i, size_t j) const
{
    const int src = m_shapes.layers[i].sources.at(j);
    return src < 0 ? m_input.get() : m_out[size_t(src)];
}

void GpuTrainingSessionBase::prepare(const Network& net, const ShapeReport& shapes, const TrainingOptions& options)
{
    makeCurrent();
    if (!shapes.ok())
        throw InputError("train: the network has a shape error: " + shapes.firstError());
    for (size_t i = 0; i < net.layers.size(); ++i)
        if (const std::string why = refusal(net, shapes, i); !why.empty())
            throw UnsupportedError(m_prefix + ": " + trainingLayerLabel(net, i) + ": " + why
                + "; train refuses the network rather than skip the layer");
    checkOptimizer(options.optimizer);
    m_prepared = false;
    m_inputResident = false;
    m_net = net;
    m_shapes = shapes;
    m_train = options;
    const size_t count = net.layers.size();
    resetLayers(count);
    m_outBuf.clear();
    m_gradBuf.clear();
    m_scratchBuf.clear();
    m_outBuf.resize(count);
    m_gradBuf.resize(count);
    m_scratchBuf.resize(count);
    m_out.assign(count, nullptr);
    m_grad.assign(count, nullptr);
    m_scratch.assign(count, nullptr);
    m_readers.assign(count, 0);
    m_gradAlias.assign(count, 0);
    int inputReaders = 0;
    for (size_t i = 0; i < count; ++i)
        for (int src : shapes.layers[i].sources)
            src < 0 ? ++inputReaders : ++m_readers[size_t(src)];
    // Autocast's FP32 list at the network's end: softmax and log_softmax write FP32 for the loss (outputInFp32).
    const LayerSpec& lastSpec = net.layers.back().spec;
    m_outputType
        = mixed() && (std::holds_alternative<Softmax>(lastSpec) || std::holds_alternative<LogSoftmax>(lastSpec))
        ? DType::F32
        : m_storage;
    m_input = DeviceBuffer(storageBytes(shapes.input.numel()), "train: the input");
    m_inputStage.reset();
    m_gradStage.reset(); // the phased step's, allocated by its first upload (uploadStorage)
    if (mixed())
        m_inputStage
            = DeviceBuffer(floatBytes(shapes.input.numel()), "train: the FP32 input (converted on the device)");
    m_inputGrad = DeviceBuffer(storageBytes(shapes.input.numel()), "train: the input gradient");
    if (inputReaders > 1)
        m_inputScratch = DeviceBuffer(storageBytes(shapes.input.numel()), "train: the input gradient's scratch");
    int64_t trainable = 0;
    for (size_t i = 0; i < count; ++i) {
        const Layer& layer = net.layers[i];
        const LayerShape& s = shapes.layers[i];
        TrainLayerState& t = layerState(i);
        const std::string label = trainingLayerLabel(net, i);
        const bool bn = std::holds_alternative<BatchNorm2d>(layer.spec);
        if ((layerKind(layer.spec).needs & kNeedsWeights) && !layer.weight)
            throw Error(label + ": its weight was not materialised");
        if (bn && (!layer.weight || !layer.bias || !layer.runningMean || !layer.runningVar))
            throw Error(label + ": batch norm's parameters or running statistics were not materialised");
        upload(t.weight, layer.weight, "train: a weight");
        upload(t.bias, layer.bias, "train: a bias");
        upload(t.mean, layer.runningMean, "train: a running mean");
        upload(t.var, layer.runningVar, "train: a running variance");
        t.weightCount = layer.weight ? layer.weight->numel() : 0;
        t.biasCount = layer.bias ? layer.bias->numel() : 0;
        const bool weighted
            = (layerKind(layer.spec).needs & kNeedsWeights) != 0 || (bn && std::get<BatchNorm2d>(layer.spec).affine);
        const bool adam = options.optimizer.kind == OptimizerSpec::Kind::Adam;
        const bool momentum = !adam && options.optimizer.momentum != 0;
        // Mixed precision: a layer that reads its parameters in the storage type gets their copies and writes its
        // gradients in that type (batch norm keeps FP32 parameters and gradients, as cuDNN's batch norm takes them).
        const bool copies = mixed() && storageParameters(i);
        t.gradType = copies ? m_storage : DType::F32;
        const auto state
            = [&](bool on, DeviceBuffer& g, void*& gp, DeviceBuffer& first, DeviceBuffer& second, int64_t n) {
                  if (!on)
                      return;
                  g = DeviceBuffer(size_t(n) * dtypeBytes(t.gradType), "train: a parameter gradient");
                  gp = g.get();
                  if (adam || momentum)
                      first = DeviceBuffer(floatBytes(n), "train: the optimizer's state");
                  if (adam)
                      second = DeviceBuffer(floatBytes(n), "train: the optimizer's state");
                  trainable += n;
              };
        t.trainWeight = weighted && layer.weight;
        t.trainBias = weighted && layer.bias;
        state(t.trainWeight, t.gradWeight, t.gW, t.firstW, t.secondW, t.weightCount);
        state(t.trainBias, t.gradBias, t.gB, t.firstB, t.secondB, t.biasCount);
        if (copies && layer.weight)
            t.weightCopy = DeviceBuffer(storageBytes(t.weightCount), "train: a weight's storage copy");
        if (copies && layer.bias)
            t.biasCopy = DeviceBuffer(storageBytes(t.biasCount), "train: a bias's storage copy");
        prepareLayer(i);
        // Views: flatten, reshape and identity read their input's buffer (contiguous storage: the same elements in
        // the same order); their gradient is the input's gradient buffer when the input (an earlier layer) has no
        // other reader. (The cudnn session refuses reshape.)
        const bool view = std::holds_alternative<Flatten>(layer.spec) || std::holds_alternative<Reshape>(layer.spec)
            || std::holds_alternative<Identity>(layer.spec);
        const int src0 = s.sources.empty() ? -1 : s.sources[0];
        // The output and its gradient: the storage type, the last layer's m_outputType.
        const size_t bytes = size_t(s.out.numel()) * dtypeBytes(i + 1 == count ? m_outputType : m_storage);
        if (view) {
            m_out[i] = src0 < 0 ? m_input.get() : m_out[size_t(src0)];
        } else {
            m_outBuf[i] = DeviceBuffer(bytes, "train: " + label + "'s output");
            m_out[i] = m_outBuf[i].get();
        }
        if (view && src0 >= 0 && m_readers[size_t(src0)] == 1) {
            m_gradAlias[i] = 1;
            m_grad[i] = m_grad[size_t(src0)];
        } else {
            m_gradBuf[i] = DeviceBuffer(bytes, "train: " + label + "'s gradient");
            m_grad[i] = m_gradBuf[i].get();
        }
        const std::string base = m_prefix + " · train · L" + std::to_string(i) + " " + layerKind(layer.spec).type + " "
            + layer.name + " · ";
        t.ranges = { base + "forward", base + "backward-data", base + "backward-weights", base + "update" };
    }
    if (trainable == 0)
        throw InputError(net.name
            + " has no trainable layer (no conv, linear, affine batch norm or prelu with parameters): there is nothing "
              "to train");
    setUpDataParallel(); // data parallel: the gradients move into the buckets (gpu_training_parallel.cpp)
    for (size_t i = 0; i < count; ++i)
        if (m_readers[i] > 1) {
            m_scratchBuf[i] = DeviceBuffer(storageBytes(shapes.layers[i].out.numel()),
                "train: " + trainingLayerLabel(net, i) + "'s gradient scratch");
            m_scratch[i] = m_scratchBuf[i].get();
        }
    m_flags = DeviceBuffer((count + 1) * sizeof(int), "train: the finiteness flags"); // a layer's each, then any
    m_hostOutput = Tensor(shapes.layers.back().out);
    m_hostGrad = Tensor(shapes.layers.back().out);
    prepareLoss();
    passStarts();
    m_workspaceBytes = 0;
    m_workspace.reset();
    for (size_t i = 0; i < count; ++i)
        planLayer(i);
    afterPlanning();
    if (m_workspaceBytes > 0)
        m_workspace = DeviceBuffer(m_workspaceBytes, workspaceWhat());
    CONVSCOPE_CUDA_CHECK(cudaStreamSynchronize(m_stream->get()));
    m_initial = net;
    m_prepared = true;
    reset();
}

void GpuTrainingSessionBase::update(size_t k, int64_t step, const int* skip, int* nonFinite, bool fromSums)
{
    TrainLayerState& t = layerState(k);
    const OptimizerSpec& o = m_train.optimizer;
    const cudaStream_t st = m_stream->get();
    // The gradient (or the phased step's FP32 sum) divided by the loss scale as it is read (FP16); the storage copy
    // rewritten (mixed precision).
    const float unscale = float(1.0 / m_scaler.scale());
    const auto one = [&](DeviceBuffer& p, const void* g, DeviceBuffer& copy, DeviceBuffer& first, DeviceBuffer& second,
                         int64_t n) {
        const train::GradientIn grad { g, fromSums ? DType::F32 : t.gradReadType(), unscale };
        const train::ParameterCopy out { copy.get(), m_storage };
        if (o.kind == OptimizerSpec::Kind::SGD) {
            train::sgdUpdate(p.floats(), grad, out, first.floats(), n, float(o.lr), float(o.momentum),
                float(o.weightDecay), t.started, skip, nonFinite, st);
            return;
        }
        const double c1 = 1 - std::pow(o.beta1, double(step)), c2 = 1 - std::pow(o.beta2, double(step));
        train::adamUpdate(p.floats(), grad, out, first.floats(), second.floats(), n, float(o.lr / c1),
            float(std::sqrt(c2)), float(o.beta1), float(o.beta2), float(o.eps), float(o.weightDecay), skip, nonFinite,
            st);
    };
    if (t.trainWeight)
        one(t.weight, fromSums ? t.sumW.get() : t.gradWeightRead(), t.weightCopy, t.firstW, t.secondW, t.weightCount);
    if (t.trainBias)
        one(t.bias, fromSums ? t.sumB.get() : t.gradBiasRead(), t.biasCopy, t.firstB, t.secondB, t.biasCount);
    t.started = true;
}

void GpuTrainingSessionBase::flagParameterGradients(size_t k, int* flag, bool fromSums)
{
    const TrainLayerState& t = layerState(k);
    const DType type = fromSums ? DType::F32 : t.gradReadType();
    if (t.trainWeight)
        train::flagNonFinite(fromSums ? t.sumW.get() : t.gradWeightRead(), t.weightCount, flag, m_stream->get(), type);
    if (t.trainBias)
        train::flagNonFinite(fromSums ? t.sumB.get() : t.gradBiasRead(), t.biasCount, flag, m_stream->get(), type);
}

void GpuTrainingSessionBase::flagGradients(size_t k, const std::vector<char>& has, bool inputHas)
{
    int* flag = static_cast<int*>(m_flags.get()) + k;
    const cudaStream_t st = m_stream->get();
    flagParameterGradients(k, flag);
    const LayerShape& s = m_shapes.layers[k];
    for (size_t j = 0; j < s.sources.size(); ++j) {
        const int src = s.sources[j];
        if (src < 0 ? inputHas : has[size_t(src)] != 0)
            train::flagNonFinite(
                src < 0 ? m_inputGrad.get() : m_grad[size_t(src)], s.ins[j].numel(), flag, st, m_storage);
    }
}

void GpuTrainingSessionBase::beginStep(const Tensor& input)
{
    if (!m_prepared)
        throw Error(m_prefix + ": step() before prepare()");
    makeCurrent();
    const Shape& want = m_shapes.input;
    if (input.shape().numel() != want.numel() || input.shape().n != want.n)
        throw InputError("train: the input is " + input.shape().str() + " but the network expects " + want.str());
    passStarts();
    for (size_t i = 0; i < layerCount(); ++i)
        layerState(i).timed = {};
}

void GpuTrainingSessionBase::uploadAndForward(const Tensor& input, int64_t step)
{
    const cudaStream_t st = m_stream->get();
    if (!m_inputResident)
        uploadInput(input);
    m_inputResident = m_train.sameInputEveryStep;
    CONVSCOPE_CUDA_CHECK(cudaMemsetAsync(m_flags.get(), 0, (layerCount() + 1) * sizeof(int), st));
    clearLossFlag();
    m_step = step;
    for (size_t i = 0; i < layerCount(); ++i)
        timedPhase(i, 0, [&] { forward(i); });
}

StepResult GpuTrainingSessionBase::stepOnOneGpu(const Tensor& input, const Tensor& target, int64_t step)
{
    beginStep(input);
    const size_t count = layerCount();
    StepResult r;
    r.layers.assign(count, {});
    uploadAndForward(input, step);
    lossOnDevice(target);
    std::vector<char> has(count, 0);
    has[count - 1] = 1;
    char inputHas = 0;
    // The finiteness check, cheap: the optimizer kernels flag a parameter gradient they read that is not finite
    // (into the last flag), and the input gradient gets one check; only when one is flagged are every layer's
    // gradients checked, to name the layer. Checking each gradient as it was made read every activation gradient
    // again (~2.8 GB a ResNet-18 b32 step, ~100 kernels).
    int* anyFlag = static_cast<int*>(m_flags.get()) + count;
    if (lossScaled())
        return stepLossScaled(step, has, r);
    for (size_t k = count; k-- > 0;) {
        if (!has[k])
            continue; // nothing downstream read this output
        backwardLayer(k, has, inputHas, false);
        if (trains(k))
            timedPhase(k, 3, [&] { update(k, step, lossBad(), anyFlag); });
    }
    m_inputHas = inputHas != 0;
    if (m_inputHas)
        train::flagNonFinite(m_inputGrad.get(), m_shapes.input.numel(), anyFlag, m_stream->get(), m_storage);
    std::vector<int> flags = stepFlags(); // the step's one synchronisation
    readDeviceLoss(r);
    if (!std::isfinite(r.loss))
        throwLossNotFinite(step, r.loss, "the loss");
    if (flags[count])
        throwFirstNonFiniteGradient(step, has, inputHas != 0);
    readTimes(r.layers);
    return r;
}

void GpuTrainingSessionBase::throwFirstNonFiniteGradient(int64_t step, const std::vector<char>& has, bool inputHas)
{
    // Every gradient is still in its buffer: check them now, in backward order. (A gradient summed from several
    // readers is checked as the total, so it is named at its first reader in backward order.)
    for (size_t k = layerCount(); k-- > 0;)
        if (has[k])
            flagGradients(k, has, inputHas);
    throwIfFlagged(step, stepFlags());
    throw InputError("step " + std::to_string(step) + ": a gradient is not finite");
}

void GpuTrainingSessionBase::throwIfGradientFlagged(int64_t step) const { throwIfFlagged(step, stepFlags()); }

std::vector<int> GpuTrainingSessionBase::stepFlags() const
{
    std::vector<int> flags(layerCount() + 1, 0); // each layer's, then step()'s any
    CONVSCOPE_CUDA_CHECK(cudaMemcpyAsync(
        flags.data(), m_flags.get(), flags.size() * sizeof(int), cudaMemcpyDeviceToHost, m_stream->get()));
    CONVSCOPE_CUDA_CHECK(cudaStreamSynchronize(m_stream->get()));
    return flags;
}

void GpuTrainingSessionBase::throwIfFlagged(int64_t step, const std::vector<int>& flags) const
{
    for (size_t k = std::min(flags.size(), layerCount()); k-- > 0;)
        if (flags[k])
            throw InputError("step " + std::to_string(step) + ": the gradient is not finite; the first layer "
                + "whose gradient is not finite (in backward order) is " + trainingLayerLabel(m_net, k));
}

void GpuTrainingSessionBase::timedPhase(size_t i, int p, const std::function<void()>& work)
{
    TrainLayerState& t = layerState(i);
    const nvtx::Range range(t.ranges[size_t(p)], m_backend);
    if (m_deferred) { // the pass's own events, read at collectPasses
        if (m_pending.empty())
            throw Error(m_prefix + ": step() under deferReads(true); call deferReads(false) first");
        const size_t e = takeEvents();
        m_pending.back().timed.push_back({ i, size_t(p), e });
        m_eventPool[e].record(m_stream->get());
        work();
        m_eventPool[e + 1].record(m_stream->get());
        return;
    }
    t.events[size_t(2 * p)].record(m_stream->get());
    work();
    t.events[size_t(2 * p + 1)].record(m_stream->get());
    t.timed[size_t(p)] = true;
}

void GpuTrainingSessionBase::backwardLayer(size_t k, std::vector<char>& has, char& inputHas, bool flagEach)
{
    const cudaStream_t st = m_stream->get();
    const LayerShape& s = m_shapes.layers[k];
    const bool bn = std::holds_alternative<BatchNorm2d>(m_net.layers[k].spec);
    // Which inputs get a gradient, and where each is written (the total, or a scratch added on).
    bool anyData = false;
    for (int src : s.sources)
        anyData = anyData || src >= 0 || m_train.inputGradient;
    if (anyData) {
        timedPhase(k, 1, [&] {
            for (size_t j = 0; j < s.sources.size(); ++j) {
                const int src = s.sources[j];
                if (src < 0 && !m_train.inputGradient)
                    continue;
                char& set = src < 0 ? inputHas : has[size_t(src)];
                void* total = src < 0 ? m_inputGrad.get() : m_grad[size_t(src)];
                if (m_gradAlias[k] && src >= 0) {
                    set = 1; // a view's gradient is its input's buffer already
                    continue;
                }
                void* gx = set ? (src < 0 ? m_inputScratch.get() : m_scratch[size_t(src)]) : total;
                if (!gx)
                    throw Error(trainingLayerLabel(m_net, k) + ": no scratch for a gradient with several readers");
                if (bn)
                    batchNormBackward(k, gx);
                else
                    backwardData(k, j, gx);
                if (set)
                    train::accumulate(total, gx, s.ins[j].numel(), st, m_storage);
                set = 1;
            }
        });
    }
    if (trains(k)) {
        timedPhase(k, 2, [&] {
            if (!bn)
                backwardWeights(k);
            else if (!anyData)
                batchNormBackward(k, nullptr); // dγ and dβ without the input gradient
            // else: batch norm's backward gave dγ and dβ in the backward-data phase
        });
    }
    if (flagEach)
        flagGradients(k, has, inputHas != 0);
}

void GpuTrainingSessionBase::readTimes(std::vector<LayerPhaseMs>& times) const
{
    times.assign(layerCount(), {});
    for (size_t i = 0; i < layerCount(); ++i) {
        const TrainLayerState& t = layerState(i);
        const auto elapsed = [&](int p) {
            return t.timed[size_t(p)] ? elapsedMs(t.events[size_t(2 * p)], t.events[size_t(2 * p + 1)]) : -1.0;
        };
        times[i] = { elapsed(0), elapsed(1), elapsed(2), elapsed(3) };
    }
}

void GpuTrainingSessionBase::reset()
{
    if (!m_prepared)
        return;
    makeCurrent();
    const cudaStream_t st = m_stream->get();
    for (size_t i = 0; i < layerCount(); ++i) {
        const Layer& layer = m_initial.layers[i];
        TrainLayerState& t = layerState(i);
        upload(t.weight, layer.weight, "train: a weight");
        upload(t.bias, layer.bias, "train: a bias");
        upload(t.mean, layer.runningMean, "train: a running mean");
        upload(t.var, layer.runningVar, "train: a running variance");
        for (DeviceBuffer* b : { &t.firstW, &t.secondW, &t.firstB, &t.secondB })
            if (b->get())
                CONVSCOPE_CUDA_CHECK(cudaMemsetAsync(b->get(), 0, b->bytes(), st));
        t.started = false;
    }
    refreshParameterCopies();
    m_scaler.reset(initialLossScale());
    m_stepScale = 1;
    m_updatesDone = 0;
    CONVSCOPE_CUDA_CHECK(cudaStreamSynchronize(st));
}

std::unique_ptr<Tensor> GpuTrainingSessionBase::download(const DeviceBuffer& src, const Shape& shape) const
{
    if (src.bytes() < floatBytes(shape.numel()))
        throw Error(m_prefix + ": a device tensor is smaller than its shape " + shape.str());
    return std::make_unique<Tensor>(downloadAs(src.get(), DType::F32, shape, 1.0f));
}

Network GpuTrainingSessionBase::trainedNetwork() const
{
    makeCurrent();
    Network net = m_initial;
    const auto fetch = [&](const DeviceBuffer& b, const std::shared_ptr<const Tensor>& like) {
        return like && b.get() ? std::shared_ptr<const Tensor>(download(b, like->shape())) : like;
    };
    for (size_t i = 0; i < net.layers.size(); ++i) {
        Layer& layer = net.layers[i];
        const TrainLayerState& t = layerState(i);
        layer.weight = fetch(t.weight, layer.weight);
        layer.bias = fetch(t.bias, layer.bias);
        layer.runningMean = fetch(t.mean, layer.runningMean);
        layer.runningVar = fetch(t.var, layer.runningVar);
    }
    return net;
}

std::vector<ParameterRef> GpuTrainingSessionBase::parameters() const
{
    std::vector<ParameterRef> refs;
    for (size_t i = 0; i < layerCount(); ++i) {
        if (layerState(i).trainWeight)
            refs.push_back({ i, "weight" });
        if (layerState(i).trainBias)
            refs.push_back({ i, "bias" });
    }
    return refs;
}

Tensor GpuTrainingSessionBase::parameterGradient(const ParameterRef& ref) const
{
    if (ref.layer >= layerCount())
        throw Error("train: no layer " + std::to_string(ref.layer));
    const TrainLayerState& t = layerState(ref.layer);
    const Layer& layer = m_initial.layers[ref.layer];
    const bool w = ref.name == "weight";
    if (!(w ? t.trainWeight : ref.name == "bias" && t.trainBias))
        throw Error("train: layer " + std::to_string(ref.layer) + " has no parameter " + ref.name);
    makeCurrent();
    // FP16: the gradient as GradScaler's unscale_ leaves it (divided by the scale the step ran with).
    return downloadAs(w ? t.gradWeightRead() : t.gradBiasRead(), t.gradReadType(),
        (w ? layer.weight : layer.bias)->shape(), float(1.0 / m_stepScale));
}

Tensor GpuTrainingSessionBase::inputGradient() const
{
    if (!m_train.inputGradient || !m_inputHas)
        throw Error("train: the input gradient was not computed (TrainingOptions::inputGradient)");
    makeCurrent();
    return downloadAs(m_inputGrad.get(), m_storage, m_shapes.input, float(1.0 / m_stepScale));
}

std::map<std::string, std::string> GpuTrainingSessionBase::metadata() const
{
    std::map<std::string, std::string> m = deviceInfo();
    m["algorithm"] = m_prefix;
    m["clock"] = "CUDA events per phase and around the loss, which runs on the device";
    m["input"] = m_train.sameInputEveryStep
        ? "uploaded with the target at the first step and kept on the device (the same batch every step)"
        : "uploaded at every step (in the wall clock, in no phase)";
    m["optimizer_state"] = "FP32 on the device";
    if (mixed())
        m["storage"] = std::string(dtypeName(m_storage))
            + " activations and gradients (NCHW); FP32 parameters, batch norm statistics and optimizer state, the "
              "convolutions' and linear layers' parameters also kept in "
            + dtypeName(m_storage) + " (rewritten by each update)"
            + (lossScaled() ? "; the loss scaled as torch.cuda.amp.GradScaler (65536 at first, halved at an "
                              "overflow, the step then skipped; doubled after 2000 clean steps)"
                            : "; no loss scaling (BF16 has FP32's range)");
    m["workspace"] = mib(m_workspaceBytes);
    for (size_t i = 0; i < layerCount(); ++i)
        if (!layerState(i).note.empty())
            m["layer " + std::to_string(i) + " " + m_net.layers[i].name] = layerState(i).note;
    extraMetadata(m);
    return m;
}

} // namespace convscope::gpu
