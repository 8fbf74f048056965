// The onednn backend's HostLayerOps (onednn_training.h): which layers run on oneDNN in training, and their forward,
// backward-data and backward-weights as calls of the primitives onednn_training_plan.cpp prepared.
#include "backends/onednn/onednn_training.h"
#include "backends/onednn/onednn_precision.h"

#include "compute/error.h"
#include "compute/layer_kinds.h"
#include "compute/training/mixed_products.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <utility>

namespace convscope::onednn {

namespace {

    std::string layerName(const Network& net, size_t i)
    {
        return "layer " + std::to_string(i) + " (" + net.layers[i].name + ", " + layerKind(net.layers[i].spec).type
            + ")";
    }

    const Tensor& need(const Tensor* t, const Network& net, size_t i, const char* what)
    {
        if (!t)
            throw Error("onednn.auto training: " + layerName(net, i) + " has no " + what);
        return *t;
    }

    class OnednnTrainingOps final : public HostLayerOps {
    public:
        OnednnTrainingOps(MathMode math, std::string weightGradient, std::string dataGradient)
            : m_engine(dnnl::engine::kind::cpu, 0)
            , m_stream(m_engine)
            , m_math(math)
            , m_weightGradient(std::move(weightGradient))
            , m_dataGradient(std::move(dataGradient))
        {
        }

        void prepare(const Network& net, const ShapeReport& shapes, const TrainingOptions& options) override
        {
            m_net = net;
            m_momentum = options.batchNormMomentum;
            m_plans.clear();
            m_plans.resize(net.layers.size());
            m_notes.assign(net.layers.size(), {});
            for (size_t i = 0; i < net.layers.size(); ++i) {
                const std::string cpu = "the CPU's training code (cpu.im2col_gemm's, on the same host tensors): ";
                try {
                    TrainPlan p = planTraining(net.layers[i], shapes.layers[i], m_engine, productType(m_math));
                    std::string note = "oneDNN: forward " + p.forward.impl + "; backward-data " + p.data.impl;
                    if (p.weights.primitive)
                        note += "; backward-weights " + p.weights.impl;
                    if (p.kind == TrainPlan::Kind::Conv && m_math == MathMode::BF16)
                        note += "; bf16 operands (the reorders round them), fp32 sums, fp32 weight gradients";
                    if (p.kind == TrainPlan::Kind::BatchNorm)
                        note += " (dx, dγ, dβ in one primitive, timed as backward-data when the input gradient "
                                "is needed)";
                    p.forward.label = layerName(net, i) + " forward";
                    p.data.label = layerName(net, i) + " backward-data";
                    p.weights.label = layerName(net, i) + " backward-weights";
                    p.weightsFp32.label = p.weights.label + " (FP32)";
                    p.dataFp32.label = p.data.label + " (FP32)";
                    if (p.dataFp32.primitive)
                        note += "; " + chooseFaster(p.data, p.dataFp32, p.dataInFp32, m_dataGradient, "backward-data");
                    if (p.weightsFp32.primitive)
                        note += "; "
                            + chooseFaster(
                                p.weights, p.weightsFp32, p.weightsInFp32, m_weightGradient, "backward-weights");
                    m_notes[i] = note;
                    m_plans[i] = std::move(p);
                } catch (const UnsupportedError& e) {
                    m_notes[i] = cpu + e.what();
                } catch (const dnnl::error& e) {
                    m_notes[i] = cpu + "oneDNN has no implementation (" + e.what() + ")";
                }
            }
        }

        bool owns(size_t layer) const override { return layer < m_plans.size() && m_plans[layer].has_value(); }

        void forward(size_t i, const Tensor& x, const HostLayerParams& p, Tensor& y) override
        {
            TrainPlan& plan = *m_plans.at(i);
            switch (plan.kind) {
            case TrainPlan::Kind::Conv: {
                std::vector<const void*> h { x.data(), need(p.weight, m_net, i, "weight").data() };
                if (plan.hasBias)
                    h.push_back(need(p.bias, m_net, i, "bias").data());
                h.push_back(y.data());
                run(plan.forward, h, m_engine, m_stream);
                break;
            }
            case TrainPlan::Kind::BatchNorm:
                batchNormForward(i, plan, x, p, y);
                break;
            case TrainPlan::Kind::Prelu:
                run(plan.forward, { x.data(), need(p.weight, m_net, i, "weight").data(), y.data() }, m_engine,
                    m_stream);
                plan.dataRan = false;
                break;
            case TrainPlan::Kind::Eltwise:
            case TrainPlan::Kind::Pool:
            case TrainPlan::Kind::Softmax:
                run(plan.forward, { x.data(), y.data() }, m_engine, m_stream);
                break;
            }
        }

        void backwardData(
            size_t i, const Tensor& x, const Tensor& y, const Tensor& gy, const HostLayerParams& p, Tensor& gx) override
        {
            TrainPlan& plan = *m_plans.at(i);
            switch (plan.kind) {
            case TrainPlan::Kind::Conv:
                run(plan.dataInFp32 ? plan.dataFp32 : plan.data,
                    { gy.data(), need(p.weight, m_net, i, "weight").data(), gx.data() }, m_engine, m_stream);
                break;
            case TrainPlan::Kind::BatchNorm:
                batchNormBackward(i, plan, x, gy, p, gx.data());
                plan.dataRan = true;
                break;
            case TrainPlan::Kind::Prelu:
                preluBackward(i, plan, x, gy, p, gx.data());
                plan.dataRan = true;
                break;
            case TrainPlan::Kind::Eltwise:
                run(plan.data, { gy.data(), x.data(), gx.data() }, m_engine, m_stream);
                break;
            case TrainPlan::Kind::Pool:
                run(plan.data, { gy.data(), gx.data() }, m_engine, m_stream);
                break;
            case TrainPlan::Kind::Softmax:
                run(plan.data, { y.data(), gy.data(), gx.data() }, m_engine, m_stream);
                break;
            }
        }

        void backwardWeights(size_t i, const Tensor& x, const Tensor& gy, const HostLayerParams& p) override
        {
            TrainPlan& plan = *m_plans.at(i);
            if (plan.kind == TrainPlan::Kind::BatchNorm || plan.kind == TrainPlan::Kind::Prelu) {
                // The one backward primitive ran in backwardData (the parameters' gradients were copied there), or
                // runs here with dx into scratch: the first layer, whose input gradient is not asked for.
                if (!plan.dataRan && plan.kind == TrainPlan::Kind::BatchNorm)
                    batchNormBackward(i, plan, x, gy, p, plan.dxScratch.get_data_handle());
                else if (!plan.dataRan)
                    preluBackward(i, plan, x, gy, p, plan.dxScratch.get_data_handle());
                plan.dataRan = false;
                return;
            }
            if (plan.kind != TrainPlan::Kind::Conv)
                throw Error("internal error: onednn.auto training: " + layerName(m_net, i) + " has no weights");
            std::vector<const void*> h { x.data(), gy.data(), need(p.gradWeight, m_net, i, "weight gradient").data() };
            if (plan.hasBias)
                h.push_back(need(p.gradBias, m_net, i, "bias gradient").data());
            run(plan.weightsInFp32 ? plan.weightsFp32 : plan.weights, h, m_engine, m_stream);
        }

        std::map<std::string, std::string> metadata() const override
        {
            const dnnl_version_t* v = dnnl_version();
            std::map<std::string, std::string> m { { "onednn",
                                                       std::to_string(v->major) + "." + std::to_string(v->minor) + "."
                                                           + std::to_string(v->patch) },
                { "isa", isaName() }, { "math", trainingMathDescription(m_math) } };
            for (size_t i = 0; i < m_notes.size(); ++i)
                m["layer " + std::to_string(i) + " " + m_net.layers[i].name] = m_notes[i];
            return m;
        }

    private:
        // --math bf16: oneDNN's bf16 primitive of a gradient (`what`: "backward-weights" or "backward-data") and the
        // FP32 one on bf16-rounded operands, each run on zero-filled tensors of the layer's sizes (once to warm up,
        // then the best of three), the faster kept — or the one `setting` (--option weight_gradient / data_gradient)
        // pins; the note's words say which and the two times.
        std::string chooseFaster(
            Call& bf16Call, Call& fp32Call, bool& inFp32, const std::string& setting, const std::string& what)
        {
            if (setting != "auto") {
                inFp32 = setting == "fp32";
                const std::string option = what == "backward-data" ? "data_gradient" : "weight_gradient";
                return what + ": " + setting + " (--option " + option + "=" + setting + ")"
                    + (inFp32 ? ", FP32 on bf16-rounded operands: " + fp32Call.impl : "");
            }
            // Each argument as large as the primitive's user descriptor says (a linear layer's bias gradient is
            // out_features long, not the output shape's c on a rank other than 2: sizing it from c overran the
            // buffer, found by the cross-backend training test).
            std::vector<std::vector<float>> args;
            std::vector<const void*> h;
            for (const Operand& op : bf16Call.operands) {
                args.emplace_back(op.user.get_size() / sizeof(float));
                h.push_back(args.back().data());
            }
            const auto best = [&](Call& call) {
                run(call, h, m_engine, m_stream);
                double ms = 1e300;
                for (int k = 0; k < 3; ++k) {
                    const auto t0 = std::chrono::steady_clock::now();
                    run(call, h, m_engine, m_stream);
                    ms = std::min(
                        ms, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
                }
                return ms;
            };
            const double bf16 = best(bf16Call), fp32 = best(fp32Call);
            inFp32 = fp32 < bf16;
            const auto ms = [](double v) {
                char b[32];
                std::snprintf(b, sizeof b, "%.3f ms", v);
                return std::string(b);
            };
            return what + " measured at prepare: bf16 " + ms(bf16) + ", FP32 on bf16-rounded operands " + ms(fp32)
                + " (" + fp32Call.impl + "): " + (inFp32 ? "FP32" : "bf16") + " kept";
        }

        // The batch's statistics normalise; the running averages move as torch.nn.BatchNorm2d.train() moves them:
        // running = (1 − momentum)·running + momentum·batch, with the unbiased variance (N·D·H·W / (N·D·H·W − 1)).
        void batchNormForward(size_t i, TrainPlan& plan, const Tensor& x, const HostLayerParams& p, Tensor& y)
        {
            if (plan.count <= 1)
                throw InputError("batch norm (training): expected more than 1 value per channel when training, got "
                                 "input "
                    + x.shape().str() + " (PyTorch refuses it too)");
            std::vector<const void*> h { x.data() };
            if (plan.hasScale)
                h.push_back(need(p.weight, m_net, i, "weight").data());
            if (plan.hasShift)
                h.push_back(need(p.bias, m_net, i, "bias").data());
            h.push_back(y.data());
            run(plan.forward, h, m_engine, m_stream);
            plan.dataRan = false;
            if (!p.mean || !p.var)
                throw Error("onednn.auto training: " + layerName(m_net, i) + " has no running statistics");
            Tensor& rm = *p.mean;
            Tensor& rv = *p.var;
            const auto* mean = static_cast<const float*>(plan.mean.get_data_handle());
            const auto* var = static_cast<const float*>(plan.variance.get_data_handle());
            const double m = m_momentum, unbias = double(plan.count) / double(plan.count - 1);
            for (int64_t c = 0; c < rm.numel(); ++c) {
                rm.data()[c] = static_cast<float>((1 - m) * rm.data()[c] + m * mean[c]);
                rv.data()[c] = static_cast<float>((1 - m) * rv.data()[c] + m * var[c] * unbias);
            }
        }

        void batchNormBackward(
            size_t i, TrainPlan& plan, const Tensor& x, const Tensor& gy, const HostLayerParams& p, void* gx)
        {
            std::vector<const void*> h { x.data(), gy.data() };
            if (plan.hasScale)
                h.push_back(need(p.weight, m_net, i, "weight").data());
            if (plan.hasShift)
                h.push_back(need(p.bias, m_net, i, "bias").data());
            h.push_back(gx);
            run(plan.data, h, m_engine, m_stream);
            const auto copy = [](const memory& from, Tensor* to) {
                if (to)
                    std::memcpy(to->data(), from.get_data_handle(), size_t(to->numel()) * sizeof(float));
            };
            if (plan.hasScale)
                copy(plan.diffScale, p.gradWeight);
            if (plan.hasShift)
                copy(plan.diffShift, p.gradBias);
        }

        void preluBackward(
            size_t i, TrainPlan& plan, const Tensor& x, const Tensor& gy, const HostLayerParams& p, void* gx)
        {
            run(plan.data, { x.data(), need(p.weight, m_net, i, "weight").data(), gy.data(), gx }, m_engine, m_stream);
            if (!p.gradWeight)
                throw Error("onednn.auto training: " + layerName(m_net, i) + " has no weight gradient");
            std::memcpy(
                p.gradWeight->data(), plan.diffScale.get_data_handle(), size_t(p.gradWeight->numel()) * sizeof(float));
        }

        dnnl::engine m_engine;
        dnnl::stream m_stream;
        MathMode m_math = MathMode::FP32;
        std::string m_weightGradient; // --option weight_gradient: auto, bf16 or fp32
        std::string m_dataGradient; // --option data_gradient: auto, bf16 or fp32
        Network m_net;
        double m_momentum = 0.1;
        std::vector<std::optional<TrainPlan>> m_plans;
        std::vector<std::string> m_notes;
    };

} // namespace

memory::data_type productType(MathMode math) { return math == MathMode::BF16 ? memory::data_type::bf16 : kF32; }

std::string trainingMathDescription(MathMode math)
{
    using cpu_training::mixedTrainingMath;
    if (math != MathMode::BF16) // fp16 never reaches a session (no f16 convolution on the CPU in oneDNN 2.6)
        return mixedTrainingMath(math == MathMode::TF32 ? math : MathMode::FP32, {}, {});
    return mixedTrainingMath(math, "the convolutions and linear layers on oneDNN", "bf16 products, fp32 sums") + " ("
        + isaName() + ")";
}

std::unique_ptr<HostLayerOps> makeTrainingOps(
    MathMode math, const std::string& weightGradient, const std::string& dataGradient)
{
    return std::make_unique<OnednnTrainingOps>(math, weightGradient, dataGradient);
}

} // namespace convscope::onednn
