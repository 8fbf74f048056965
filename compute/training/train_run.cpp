// trainNetwork: every selection's training session from the same starting weights, warm-up steps, a reset, then the
// timed steps; and saving the trained weights as .npy files plus a network file that reads them.
#include "compute/training/train_run.h"

#include "compute/atomic_file.h"
#include "compute/backend_registry.h"
#include "compute/error.h"
#include "compute/layer_kinds.h"
#include "compute/materialize.h"
#include "compute/network_json.h"
#include "compute/normalization.h"
#include "compute/npy.h"
#include "compute/training/distributed.h"

#include <chrono>
#include <cmath>

namespace convscope {

std::string SelectionTraining::label() const
{
    return rank < 0 ? selection.str() : selection.str() + " · rank " + std::to_string(rank);
}

double parameterDrift(const Tensor& value, const Tensor& reference)
{
    double diff = 0, norm = 0;
    const int64_t count = std::min(value.numel(), reference.numel());
    for (int64_t i = 0; i < count; ++i) {
        const double r = reference.data()[i], d = double(value.data()[i]) - r;
        diff += d * d;
        norm += r * r;
    }
    const double rms = std::sqrt(norm / double(std::max<int64_t>(count, 1)));
    return rms < 1e-6 ? std::sqrt(diff / double(std::max<int64_t>(count, 1))) : std::sqrt(diff / norm);
}

TrainResult trainNetwork(Network net, const Tensor& input, const Tensor& target, const TrainRunOptions& options)
{
    if (net.layers.empty())
        throw InputError(net.name + " has no layers: nothing to train");
    if (options.steps < 1)
        throw InputError("--steps must be at least 1, got " + std::to_string(options.steps));
    if (options.warmup < 0)
        throw InputError("--warmup must be 0 or more, got " + std::to_string(options.warmup));
    if (options.selections.empty())
        throw InputError("train: no selection to run (--backends)");
    checkOptimizer(options.training.optimizer);
    TrainResult result;
    result.options = options;
    result.shapes = inferShapes(net);
    if (!result.shapes.ok())
        throw InputError(net.name + ": " + result.shapes.firstError());
    const Shape& inShape = result.shapes.input;
    if (input.shape().numel() != inShape.numel() || input.shape().n != inShape.n)
        throw InputError("the input is " + input.shape().str() + " but the network expects " + inShape.str());
    const Shape& outShape = result.shapes.layers.back().out;
    if (options.training.loss == LossKind::CrossEntropy)
        checkClassIndices(outShape, target);
    else if (target.numel() != outShape.numel())
        throw InputError("the target has " + std::to_string(target.numel()) + " values but the output " + outShape.str()
            + " has " + std::to_string(outShape.numel()));
    result.globalBatch = inShape.n;
    const std::shared_ptr<ProcessGroup>& group = options.training.group;
    const bool ddp = group && group->worldSize() > 1;
    Tensor localInput, localTarget;
    if (ddp) {
        // The same run on every rank, or a clear message now rather than mismatched all-reduces later.
        std::string run = net.name + ", input " + inShape.str() + ", " + lossKindName(options.training.loss) + ", "
            + std::to_string(options.warmup) + " + " + std::to_string(options.steps) + " steps on";
        for (const Selection& sel : options.selections)
            run += " " + sel.str();
        group->requireSame(run, "the training");
        // Each rank trains on its slice of the batch; its network takes the slice's batch.
        const BatchSlice slice = splitBatch(inShape.n, group->rank(), group->worldSize());
        localInput = sliceBatch(input, inShape.n, slice);
        localTarget = sliceBatch(target, inShape.n, slice);
        net.input.batch = slice.count;
        result.shapes = inferShapes(net);
        if (!result.shapes.ok())
            throw InputError(net.name + " at a batch of " + std::to_string(slice.count)
                + " per rank: " + result.shapes.firstError());
        result.worldSize = group->worldSize();
    }
    const Tensor& in = ddp ? localInput : input;
    const Tensor& tgt = ddp ? localTarget : target;
    materializeParameters(net, result.shapes);
    result.network = net;

    for (const Selection& sel : options.selections) {
        if (sel.fused)
            throw UnsupportedError(sel.str()
                + ": fused selections are unsupported in training (batch norm trains "
                  "on batch statistics, so it cannot fold into the convolution)");
        const std::shared_ptr<Backend> backend = BackendRegistry::instance().resolve(sel);
        std::unique_ptr<TrainingSession> session = backend->createTrainingSession(sel.algorithm, options.session);
        if (!session)
            throw UnsupportedError(sel.str() + ": the " + sel.backend
                + " backend has no backward ops yet (training is unsupported there); train on cpu.direct, "
                  "cpu.im2col_gemm, onednn.auto, cudnn.auto or cuda.implicit_gemm");
        if (ddp && !session->dataParallel())
            throw UnsupportedError(sel.str()
                + ": data-parallel training (--distributed) is unsupported there; it runs on the GPU backends (cudnn, "
                  "cuda), built with "
                  "NCCL");
        TrainingOptions training = options.training;
        training.sameInputEveryStep = true; // one batch, every step
        session->prepare(net, result.shapes, training);
        for (int s = 1; s <= options.warmup; ++s) {
            try {
                session->step(in, tgt, s);
            } catch (const InputError& e) {
                throw InputError(sel.str() + ", warm-up " + e.what());
            }
        }
        if (options.warmup > 0)
            session->reset();
        SelectionTraining st;
        st.selection = sel;
        for (int s = 1; s <= options.steps; ++s) {
            try {
                const auto t0 = std::chrono::steady_clock::now();
                st.steps.push_back(session->step(in, tgt, s));
                st.steps.back().wallMs
                    = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
            } catch (const InputError& e) {
                throw InputError(sel.str() + ", " + e.what());
            }
            if (options.stepDone)
                options.stepDone(result.selections.size(), s, st.steps.back().loss);
        }
        st.metadata = session->metadata();
        st.trained = session->trainedNetwork();
        if (options.training.inputGradient)
            st.inputGradient = std::make_shared<const Tensor>(session->inputGradient());
        if (options.keepWeightGradients) {
            st.weightGradients.resize(net.layers.size());
            for (const ParameterRef& p : session->parameters())
                if (p.name == "weight" && p.layer < st.weightGradients.size())
                    st.weightGradients[p.layer] = std::make_shared<const Tensor>(session->parameterGradient(p));
        }
        if (ddp) {
            st.rank = group->rank();
            st.worldSize = group->worldSize();
        }
        if (!result.selections.empty() && !ddp) {
            const Network& ref = result.selections.front().trained;
            for (size_t i = 0; i < ref.layers.size(); ++i)
                for (const auto& [a, b] : { std::pair { ref.layers[i].weight, st.trained.layers[i].weight },
                         std::pair { ref.layers[i].bias, st.trained.layers[i].bias } })
                    if (a && b)
                        st.maxParamRelL2 = std::max(st.maxParamRelL2, parameterDrift(*b, *a));
        }
        result.selections.push_back(std::move(st));
        if (ddp)
            gatherRanks(result, *group); // rank 0: every rank's steps after its own
    }
    return result;
}

namespace {
    std::vector<int64_t> parameterDims(const Layer& layer, const Tensor& t, bool isWeight)
    {
        if (const auto* ln = std::get_if<LayerNorm>(&layer.spec)) // weight and bias of dims normalized_shape
            return ln->normalized_shape;
        if (!isWeight || std::holds_alternative<PReLU>(layer.spec) || std::holds_alternative<BatchNorm2d>(layer.spec))
            return { t.numel() };
        if (std::holds_alternative<Linear>(layer.spec))
            return { t.shape().n, t.shape().c };
        return t.shape().dims();
    }
} // namespace

void saveTrainedWeights(const std::filesystem::path& dir, const Network& trained)
{
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec)
        throw InputError("--save-weights " + dir.string() + ": cannot create the folder (" + ec.message() + ")");
    Network out = trained;
    out.baseDir = dir;
    for (Layer& layer : out.layers) {
        const std::string base = safeFileName(layer.name);
        const auto write = [&](const std::shared_ptr<const Tensor>& t, const std::string& what, bool isWeight) {
            const std::string file = base + "." + what + ".npy";
            writeNpy(dir / file, parameterDims(layer, *t, isWeight), t->data());
            return file;
        };
        if (std::holds_alternative<BatchNorm2d>(layer.spec)) {
            const auto param = [](const std::string& file) {
                ParamValue v;
                v.kind = ParamValue::Kind::File;
                v.file = file;
                return v;
            };
            layer.explicitParams["running_mean"] = param(write(layer.runningMean, "running_mean", false));
            layer.explicitParams["running_var"] = param(write(layer.runningVar, "running_var", false));
            if (std::get<BatchNorm2d>(layer.spec).affine) {
                layer.explicitParams["weight"] = param(write(layer.weight, "weight", true));
                layer.explicitParams["bias"] = param(write(layer.bias, "bias", false));
            }
            continue;
        }
        if (!(layerKind(layer.spec).needs & kNeedsWeights) || !layer.weight)
            continue;
        // A norm without affine has no parameter to save (its 1 and 0 are not PyTorch's parameters); layer_norm
        // without bias saves its weight only.
        const bool norm = isNormLayer(layer.spec);
        if (norm && !normHasWeight(layer.spec))
            continue;
        InitSpec init;
        init.kind = "file";
        init.weight_file = write(layer.weight, "weight", true);
        if (layer.bias && (!norm || normHasBias(layer.spec)))
            init.bias_file = write(layer.bias, "bias", false);
        layer.init = init;
    }
    out.description = (trained.description.empty() ? std::string() : trained.description + " ")
        + "Trained by convscope-cli train; the weights are the .npy files beside this file.";
    saveNetwork(out, dir / "network.json");
}

} // namespace convscope
