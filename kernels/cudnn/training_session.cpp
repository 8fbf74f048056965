// The cudnn TrainingSession's flow (training_layers.h has the kinds): prepare copies the parameters to the device,
// allocates every output, gradient, scratch and the optimizer's state once, and plans each layer; a step uploads the
// input, runs the forward, the loss on the host, the backward in reverse layer order with each layer's update right
// after its gradients (as the CPU's session), and synchronises once at the end to read the events and the
// finiteness flags. A tensor read by several layers sums their gradients (the first writes the gradient buffer, the
// others a scratch buffer added on); a layer whose output nothing reads gets no gradient and no update.
#include "kernels/cudnn/training_session.h"

#include "compute/error.h"
#include "compute/layer_kinds.h"
#include "compute/nvtx.h"
#include "kernels/common/cuda_check.h"
#include "kernels/common/device_info.h"
#include "kernels/common/training_kernels.cuh"
#include "kernels/cudnn/conv_plan.h"
#include "kernels/cudnn/training_layers.h"

#include <chrono>
#include <cmath>

namespace convscope::cudnn {

namespace {
    size_t floatBytes(int64_t count) { return size_t(count) * sizeof(float); }
} // namespace

std::string trainLayerLabel(const Network& net, size_t i) { return trainingLayerLabel(net, i); }

CudnnTrainingSession::CudnnTrainingSession(std::string algorithm, SessionOptions options)
    : m_algorithm(std::move(algorithm))
    , m_prefix("cudnn." + m_algorithm)
    , m_options(std::move(options))
    , m_pinned(algorithmFromName(m_algorithm))
{
    if (m_algorithm != "auto" && !m_pinned)
        throw UnsupportedError(m_prefix + ": unknown algorithm");
    if (m_options.math != MathMode::FP32)
        throw UnsupportedError(m_prefix + ": training in " + mathModeName(m_options.math)
            + " is unsupported on cudnn (the training step runs FP32 math only; leave --math at fp32)");
    m_workspaceLimit = kDefaultWorkspaceLimit;
    if (const auto it = m_options.extra.find("workspace_limit"); it != m_options.extra.end()) {
        try {
            m_workspaceLimit = size_t(std::stoull(it->second));
        } catch (const std::exception&) {
            throw InputError("workspace_limit=" + it->second + ": expected a number of bytes");
        }
    }
    gpu::requireUsable();
    m_device = gpu::selectDevice();
    m_stream = std::make_unique<gpu::CudaStream>();
    threadHandles(); // fail here, with cuDNN's reason, rather than in the middle of prepare
}

CudnnTrainingSession::~CudnnTrainingSession()
{
    // Data parallel first: after a failed step the compute stream may wait on an all-reduce that a dead rank never
    // completes; the communicator's abort ends it, so the synchronisation below cannot hang.
    m_ddp.reset();
    // Queued work must finish before the buffers it uses are freed.
    if (m_stream && !gpu::isPoisoned())
        (void)cudaStreamSynchronize(m_stream->get());
}

void CudnnTrainingSession::makeCurrent() const { CONVSCOPE_CUDA_CHECK(cudaSetDevice(m_device)); }

void CudnnTrainingSession::upload(gpu::DeviceBuffer& dst, const std::shared_ptr<const Tensor>& src, const char* what)
{
    if (!src)
        return;
    if (!dst.get())
        dst = gpu::DeviceBuffer(floatBytes(src->numel()), what);
    CONVSCOPE_CUDA_CHECK(
        cudaMemcpyAsync(dst.get(), src->data(), floatBytes(src->numel()), cudaMemcpyHostToDevice, m_stream->get()));
}

const float* CudnnTrainingSession::in(size_t i, size_t j) const
{
    const int src = m_shapes.layers[i].sources.at(j);
    return src < 0 ? m_input.floats() : m_out[size_t(src)];
}

void CudnnTrainingSession::prepare(const Network& net, const ShapeReport& shapes, const TrainingOptions& options)
{
    makeCurrent();
    if (!shapes.ok())
        throw InputError("train: the network has a shape error: " + shapes.firstError());
    for (size_t i = 0; i < net.layers.size(); ++i)
        if (const std::string why = cudnnTrainingRefusal(net, shapes, i); !why.empty())
            throw UnsupportedError(m_prefix + ": " + trainLayerLabel(net, i) + ": " + why
                + "; train refuses the network rather than skip the layer");
    checkOptimizer(options.optimizer);
    m_prepared = false;
    m_net = net;
    m_shapes = shapes;
    m_train = options;
    const size_t count = net.layers.size();
    m_layers.clear();
    m_layers.resize(count);
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
    m_input = gpu::DeviceBuffer(floatBytes(shapes.input.numel()), "train: the input");
    m_inputGrad = gpu::DeviceBuffer(floatBytes(shapes.input.numel()), "train: the input gradient");
    if (inputReaders > 1)
        m_inputScratch = gpu::DeviceBuffer(floatBytes(shapes.input.numel()), "train: the input gradient's scratch");
    int64_t trainable = 0;
    for (size_t i = 0; i < count; ++i) {
        const Layer& layer = net.layers[i];
        const LayerShape& s = shapes.layers[i];
        TrainLayer& t = m_layers[i];
        const std::string label = trainLayerLabel(net, i);
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
        const auto state
            = [&](bool on, gpu::DeviceBuffer& g, gpu::DeviceBuffer& first, gpu::DeviceBuffer& second, int64_t n) {
                  if (!on)
                      return;
                  g = gpu::DeviceBuffer(floatBytes(n), "train: a parameter gradient");
                  (&g == &t.gradWeight ? t.gW : t.gB) = g.floats();
                  if (adam || momentum)
                      first = gpu::DeviceBuffer(floatBytes(n), "train: the optimizer's state");
                  if (adam)
                      second = gpu::DeviceBuffer(floatBytes(n), "train: the optimizer's state");
                  trainable += n;
              };
        t.trainWeight = weighted && layer.weight;
        t.trainBias = weighted && layer.bias;
        state(t.trainWeight, t.gradWeight, t.firstW, t.secondW, t.weightCount);
        state(t.trainBias, t.gradBias, t.firstB, t.secondB, t.biasCount);
        if (bn) {
            const int64_t c = s.in.c;
            t.saveMean = gpu::DeviceBuffer(floatBytes(c), "train: batch norm's saved mean");
            t.saveInvStd = gpu::DeviceBuffer(floatBytes(c), "train: batch norm's saved 1/std");
            if (!t.trainWeight) {
                t.dummyScale = gpu::DeviceBuffer(floatBytes(c), "train: batch norm's dγ (not affine)");
                t.dummyBias = gpu::DeviceBuffer(floatBytes(c), "train: batch norm's dβ (not affine)");
            }
        }
        // Views: flatten and identity read their input's buffer; their gradient is the input's gradient buffer
        // when the input (an earlier layer) has no other reader.
        const bool view = std::holds_alternative<Flatten>(layer.spec) || std::holds_alternative<Identity>(layer.spec);
        const int src0 = s.sources.empty() ? -1 : s.sources[0];
        if (view) {
            m_out[i] = src0 < 0 ? m_input.floats() : m_out[size_t(src0)];
        } else {
            m_outBuf[i] = gpu::DeviceBuffer(floatBytes(s.out.numel()), "train: " + label + "'s output");
            m_out[i] = m_outBuf[i].floats();
        }
        if (view && src0 >= 0 && m_readers[size_t(src0)] == 1) {
            m_gradAlias[i] = 1;
            m_grad[i] = m_grad[size_t(src0)];
        } else {
            m_gradBuf[i] = gpu::DeviceBuffer(floatBytes(s.out.numel()), "train: " + label + "'s gradient");
            m_grad[i] = m_gradBuf[i].floats();
        }
        const std::string base = m_prefix + " · train · L" + std::to_string(i) + " " + layerKind(layer.spec).type + " "
            + layer.name + " · ";
        t.ranges = { base + "forward", base + "backward-data", base + "backward-weights", base + "update" };
    }
    if (trainable == 0)
        throw InputError(net.name
            + " has no trainable layer (no conv, linear, affine batch norm or prelu with parameters): there is nothing "
              "to train");
    if (m_train.group && m_train.group->worldSize() > 1)
        prepareDataParallel(); // the gradients move into the buckets' flat buffers
    else {
        m_ddp.reset();
        m_ddpGroup = nullptr;
        m_bucketsAfter.assign(count, {});
    }
    for (size_t i = 0; i < count; ++i)
        if (m_readers[i] > 1) {
            m_scratchBuf[i] = gpu::DeviceBuffer(
                floatBytes(shapes.layers[i].out.numel()), "train: " + trainLayerLabel(net, i) + "'s gradient scratch");
            m_scratch[i] = m_scratchBuf[i].floats();
        }
    m_flags = gpu::DeviceBuffer(count * sizeof(int), "train: the finiteness flags");
    m_hostOutput = Tensor(shapes.layers.back().out);
    m_hostGrad = Tensor(shapes.layers.back().out);
    Handles& h = threadHandles();
    CONVSCOPE_CUDNN_CHECK(cudnnSetStream(h.cudnn, m_stream->get()));
    CONVSCOPE_CUBLAS_CHECK(cublasSetStream(h.cublas, m_stream->get()));
    m_workspaceBytes = 0;
    m_workspace.reset();
    for (size_t i = 0; i < count; ++i)
        planLayer(i, h.cudnn);
    if (m_workspaceBytes > 0)
        m_workspace = gpu::DeviceBuffer(m_workspaceBytes, "train: the convolutions' workspace");
    CONVSCOPE_CUDA_CHECK(cudaStreamSynchronize(m_stream->get()));
    m_initial = net;
    m_prepared = true;
    reset();
}

bool CudnnTrainingSession::batchNormGivesData(size_t k) const
{
    const int src = m_shapes.layers[k].sources.at(0);
    return src >= 0 || m_train.inputGradient;
}

void CudnnTrainingSession::update(size_t k, int64_t step)
{
    TrainLayer& t = m_layers[k];
    const OptimizerSpec& o = m_train.optimizer;
    const cudaStream_t st = m_stream->get();
    const auto one
        = [&](gpu::DeviceBuffer& p, const float* g, gpu::DeviceBuffer& first, gpu::DeviceBuffer& second, int64_t n) {
              if (o.kind == OptimizerSpec::Kind::SGD) {
                  train::sgdUpdate(p.floats(), g, first.floats(), n, float(o.lr), float(o.momentum),
                      float(o.weightDecay), t.started, st);
                  return;
              }
              const double c1 = 1 - std::pow(o.beta1, double(step)), c2 = 1 - std::pow(o.beta2, double(step));
              train::adamUpdate(p.floats(), g, first.floats(), second.floats(), n, float(o.lr / c1),
                  float(std::sqrt(c2)), float(o.beta1), float(o.beta2), float(o.eps), float(o.weightDecay), st);
          };
    if (t.trainWeight)
        one(t.weight, t.gW, t.firstW, t.secondW, t.weightCount);
    if (t.trainBias)
        one(t.bias, t.gB, t.firstB, t.secondB, t.biasCount);
    t.started = true;
}

void CudnnTrainingSession::flagGradients(size_t k, const std::vector<char>& has, bool inputHas)
{
    const TrainLayer& t = m_layers[k];
    int* flag = static_cast<int*>(m_flags.get()) + k;
    const cudaStream_t st = m_stream->get();
    if (t.trainWeight)
        train::flagNonFinite(t.gW, t.weightCount, flag, st);
    if (t.trainBias)
        train::flagNonFinite(t.gB, t.biasCount, flag, st);
    const LayerShape& s = m_shapes.layers[k];
    for (size_t j = 0; j < s.sources.size(); ++j) {
        const int src = s.sources[j];
        if (src < 0 ? inputHas : has[size_t(src)] != 0)
            train::flagNonFinite(src < 0 ? m_inputGrad.floats() : m_grad[size_t(src)], s.ins[j].numel(), flag, st);
    }
}

StepResult CudnnTrainingSession::step(const Tensor& input, const Tensor& target, int64_t step)
{
    if (!m_prepared)
        throw Error(m_prefix + ": step() before prepare()");
    makeCurrent();
    const Shape& want = m_shapes.input;
    if (input.shape().numel() != want.numel() || input.shape().n != want.n)
        throw InputError("train: the input is " + input.shape().str() + " but the network expects " + want.str());
    const cudaStream_t st = m_stream->get();
    Handles& h = threadHandles();
    CONVSCOPE_CUDNN_CHECK(cudnnSetStream(h.cudnn, st));
    CONVSCOPE_CUBLAS_CHECK(cublasSetStream(h.cublas, st));
    // Pedantic FP32: cuBLAS never turns FP32 into TF32 through a default.
    CONVSCOPE_CUBLAS_CHECK(cublasSetMathMode(h.cublas, CUBLAS_PEDANTIC_MATH));
    const size_t count = m_net.layers.size();
    StepResult r;
    r.layers.assign(count, {});
    for (TrainLayer& t : m_layers)
        t.timed = {};
    CONVSCOPE_CUDA_CHECK(
        cudaMemcpyAsync(m_input.get(), input.data(), floatBytes(want.numel()), cudaMemcpyHostToDevice, st));
    CONVSCOPE_CUDA_CHECK(cudaMemsetAsync(m_flags.get(), 0, count * sizeof(int), st));
    const auto phase = [&](size_t i, int p, const std::function<void()>& work) { timedPhase(i, p, work); };
    m_step = step;
    for (size_t i = 0; i < count; ++i)
        phase(i, 0, [&] { forward(i, h); });

    // The loss on the host: the output down, computeLoss, its gradient up.
    const size_t last = count - 1;
    CONVSCOPE_CUDA_CHECK(cudaStreamSynchronize(st));
    {
        const auto t0 = std::chrono::steady_clock::now();
        CONVSCOPE_CUDA_CHECK(cudaMemcpyAsync(
            m_hostOutput.data(), m_out[last], floatBytes(m_hostOutput.numel()), cudaMemcpyDeviceToHost, st));
        CONVSCOPE_CUDA_CHECK(cudaStreamSynchronize(st));
        r.loss = computeLoss(m_train.loss, m_hostOutput, target, m_hostGrad);
        CONVSCOPE_CUDA_CHECK(cudaMemcpyAsync(
            m_grad[last], m_hostGrad.data(), floatBytes(m_hostGrad.numel()), cudaMemcpyHostToDevice, st));
        CONVSCOPE_CUDA_CHECK(cudaStreamSynchronize(st));
        r.lossMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    }
    bool lossFinite = std::isfinite(r.loss);
    for (int64_t e = 0; e < m_hostGrad.numel() && lossFinite; ++e)
        lossFinite = std::isfinite(m_hostGrad.data()[e]);
    if (!lossFinite && m_ddp) // every rank must reach the all-reduces: flagged, and thrown after them
        CONVSCOPE_CUDA_CHECK(cudaMemsetAsync(static_cast<int*>(m_flags.get()) + last, 1, 1, st));
    else if (!lossFinite)
        throw InputError("step " + std::to_string(step) + ": the loss is " + std::to_string(r.loss)
            + "; the first layer whose gradient is not finite is " + trainLayerLabel(m_net, last)
            + " (its output's gradient from the loss)");

    std::vector<char> has(count, 0);
    has[last] = 1;
    char inputHas = 0;
    if (m_ddp)
        m_ddp->backwardStarts(st);
    for (size_t k = count; k-- > 0;) {
        if (!has[k]) {
            bucketsReadyAfter(k);
            continue; // nothing downstream read this output
        }
        const TrainLayer& t = m_layers[k];
        backwardLayer(k, has, inputHas, h);
        if (m_ddp)
            bucketsReadyAfter(k); // the update waits for the bucket's average (below)
        else if (t.trainWeight || t.trainBias)
            phase(k, 3, [&] { update(k, step); });
    }
    m_inputHas = inputHas != 0;
    if (m_ddp) {
        m_ddp->backwardEnds(st);
        updatesAfterBuckets(has, step, [&](size_t k) { phase(k, 3, [&] { update(k, step); }); });
        r.loss = m_ddp->finishStep(static_cast<int*>(m_flags.get()), count, r.loss, st, step);
        if (!std::isfinite(r.loss))
            throw InputError("step " + std::to_string(step) + ": the loss (the mean over the ranks) is "
                + std::to_string(r.loss) + "; the first layer whose gradient is not finite is "
                + trainLayerLabel(m_net, last) + " (its output's gradient from the loss)");
        r.buckets = m_ddp->timings();
        r.backwardMs = m_ddp->backwardMs();
    }
    throwIfGradientFlagged(step);
    readTimes(r.layers);
    return r;
}

void CudnnTrainingSession::throwIfGradientFlagged(int64_t step) const
{
    const size_t count = m_layers.size();
    std::vector<int> flags(count, 0);
    CONVSCOPE_CUDA_CHECK(
        cudaMemcpyAsync(flags.data(), m_flags.get(), count * sizeof(int), cudaMemcpyDeviceToHost, m_stream->get()));
    CONVSCOPE_CUDA_CHECK(cudaStreamSynchronize(m_stream->get()));
    for (size_t k = count; k-- > 0;)
        if (flags[k])
            throw InputError("step " + std::to_string(step) + ": the gradient is not finite; the first layer "
                + "whose gradient is not finite (in backward order) is " + trainLayerLabel(m_net, k));
}

void CudnnTrainingSession::timedPhase(size_t i, int p, const std::function<void()>& work)
{
    TrainLayer& t = m_layers[i];
    const nvtx::Range range(t.ranges[size_t(p)], "cudnn");
    t.events[size_t(2 * p)].record(m_stream->get());
    work();
    t.events[size_t(2 * p + 1)].record(m_stream->get());
    t.timed[size_t(p)] = true;
}

// Which inputs of layer k get a gradient, where each is written (the total, or a scratch added on), its
// backward-data and backward-weights phases, and its finiteness flags.
void CudnnTrainingSession::backwardLayer(size_t k, std::vector<char>& has, char& inputHas, const Handles& h)
{
    const cudaStream_t st = m_stream->get();
    TrainLayer& t = m_layers[k];
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
                float* total = src < 0 ? m_inputGrad.floats() : m_grad[size_t(src)];
                if (m_gradAlias[k] && src >= 0) {
                    set = 1; // a view's gradient is its input's buffer already
                    continue;
                }
                float* gx = set ? (src < 0 ? m_inputScratch.floats() : m_scratch[size_t(src)]) : total;
                if (!gx)
                    throw Error(trainLayerLabel(m_net, k) + ": no scratch for a gradient with several readers");
                if (bn)
                    batchNormBackward(k, gx, h);
                else
                    backwardData(k, j, gx, h);
                if (set)
                    train::accumulate(total, gx, s.ins[j].numel(), st);
                set = 1;
            }
        });
    }
    if (t.trainWeight || t.trainBias) {
        timedPhase(k, 2, [&] {
            if (!bn)
                backwardWeights(k, h);
            else if (!anyData)
                batchNormBackward(k, nullptr, h); // dγ and dβ without the input gradient
            // else: cudnnBatchNormalizationBackward gave dγ and dβ in the backward-data phase
        });
    }
    flagGradients(k, has, inputHas != 0);
}

// The events of the phases that ran since the last reset of `timed`, after the stream has synchronised.
void CudnnTrainingSession::readTimes(std::vector<LayerPhaseMs>& times) const
{
    times.assign(m_layers.size(), {});
    for (size_t i = 0; i < m_layers.size(); ++i) {
        const TrainLayer& t = m_layers[i];
        const auto elapsed = [&](int p) {
            return t.timed[size_t(p)] ? gpu::elapsedMs(t.events[size_t(2 * p)], t.events[size_t(2 * p + 1)]) : -1.0;
        };
        times[i] = { elapsed(0), elapsed(1), elapsed(2), elapsed(3) };
    }
}

void CudnnTrainingSession::reset()
{
    if (!m_prepared)
        return;
    makeCurrent();
    const cudaStream_t st = m_stream->get();
    for (size_t i = 0; i < m_layers.size(); ++i) {
        const Layer& layer = m_initial.layers[i];
        TrainLayer& t = m_layers[i];
        upload(t.weight, layer.weight, "train: a weight");
        upload(t.bias, layer.bias, "train: a bias");
        upload(t.mean, layer.runningMean, "train: a running mean");
        upload(t.var, layer.runningVar, "train: a running variance");
        for (gpu::DeviceBuffer* b : { &t.firstW, &t.secondW, &t.firstB, &t.secondB })
            if (b->get())
                CONVSCOPE_CUDA_CHECK(cudaMemsetAsync(b->get(), 0, b->bytes(), st));
        t.started = false;
    }
    CONVSCOPE_CUDA_CHECK(cudaStreamSynchronize(st));
}

std::unique_ptr<Tensor> CudnnTrainingSession::download(const gpu::DeviceBuffer& src, const Shape& shape) const
{
    auto t = std::make_unique<Tensor>(shape);
    if (src.bytes() < floatBytes(t->numel()))
        throw Error(m_prefix + ": a device tensor is smaller than its shape " + shape.str());
    CONVSCOPE_CUDA_CHECK(
        cudaMemcpyAsync(t->data(), src.get(), floatBytes(t->numel()), cudaMemcpyDeviceToHost, m_stream->get()));
    CONVSCOPE_CUDA_CHECK(cudaStreamSynchronize(m_stream->get()));
    return t;
}

Network CudnnTrainingSession::trainedNetwork() const
{
    makeCurrent();
    Network net = m_initial;
    const auto fetch = [&](const gpu::DeviceBuffer& b, const std::shared_ptr<const Tensor>& like) {
        return like && b.get() ? std::shared_ptr<const Tensor>(download(b, like->shape())) : like;
    };
    for (size_t i = 0; i < net.layers.size(); ++i) {
        Layer& layer = net.layers[i];
        const TrainLayer& t = m_layers[i];
        layer.weight = fetch(t.weight, layer.weight);
        layer.bias = fetch(t.bias, layer.bias);
        layer.runningMean = fetch(t.mean, layer.runningMean);
        layer.runningVar = fetch(t.var, layer.runningVar);
    }
    return net;
}

std::vector<ParameterRef> CudnnTrainingSession::parameters() const
{
    std::vector<ParameterRef> refs;
    for (size_t i = 0; i < m_layers.size(); ++i) {
        if (m_layers[i].trainWeight)
            refs.push_back({ i, "weight" });
        if (m_layers[i].trainBias)
            refs.push_back({ i, "bias" });
    }
    return refs;
}

Tensor CudnnTrainingSession::parameterGradient(const ParameterRef& ref) const
{
    if (ref.layer >= m_layers.size())
        throw Error("train: no layer " + std::to_string(ref.layer));
    const TrainLayer& t = m_layers[ref.layer];
    const Layer& layer = m_initial.layers[ref.layer];
    const bool w = ref.name == "weight";
    if (!(w ? t.trainWeight : ref.name == "bias" && t.trainBias))
        throw Error("train: layer " + std::to_string(ref.layer) + " has no parameter " + ref.name);
    makeCurrent();
    const Shape shape = (w ? layer.weight : layer.bias)->shape();
    Tensor g(shape);
    CONVSCOPE_CUDA_CHECK(
        cudaMemcpyAsync(g.data(), w ? t.gW : t.gB, floatBytes(g.numel()), cudaMemcpyDeviceToHost, m_stream->get()));
    CONVSCOPE_CUDA_CHECK(cudaStreamSynchronize(m_stream->get()));
    return g;
}

Tensor CudnnTrainingSession::inputGradient() const
{
    if (!m_train.inputGradient || !m_inputHas)
        throw Error("train: the input gradient was not computed (TrainingOptions::inputGradient)");
    makeCurrent();
    return std::move(*download(m_inputGrad, m_shapes.input));
}

std::map<std::string, std::string> CudnnTrainingSession::metadata() const
{
    std::map<std::string, std::string> m = gpu::deviceInfo();
    m["algorithm"] = m_prefix;
    m["cudnn"] = cudnnVersionString();
    m["cublas"] = cublasVersionString();
    m["math"] = "fp32 (CUDNN_FMA_MATH, CUBLAS_PEDANTIC_MATH: no TF32)";
    m["clock"] = "CUDA events per phase; the loss on the host (steady_clock, copies included)";
    m["optimizer_state"] = "FP32 on the device";
    m["workspace"] = gpu::mib(m_workspaceBytes);
    if (m_ddp)
        m["data_parallel"] = m_ddp->description()
            + "; batch norm on each rank's own batch statistics (no "
              "SyncBatchNorm, as PyTorch DDP), rank 0's running statistics kept";
    for (size_t i = 0; i < m_layers.size(); ++i)
        if (!m_layers[i].note.empty())
            m["layer " + std::to_string(i) + " " + m_net.layers[i].name] = m_layers[i].note;
    return m;
}

std::unique_ptr<TrainingSession> makeTrainingSession(const std::string& algorithm, const SessionOptions& options)
{
    return std::make_unique<CudnnTrainingSession>(algorithm, options);
}

} // namespace convscope::cudnn
