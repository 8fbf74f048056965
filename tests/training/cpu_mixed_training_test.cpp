// Mixed precision on the CPU's training session (compute/training/mixed_products.h; --math fp16 / bf16 on cpu.direct
// and cpu.im2col_gemm): the rounding itself, where a linear layer's forward and backward round (by hand), the two
// algorithms agreeing on LeNet-5 while the mode moves them off FP32, and FP16's loss scale skipping a step whose
// gradients overflow, as torch.amp.GradScaler does.
#include "compute/backend_registry.h"
#include "compute/materialize.h"
#include "compute/network_json.h"
#include "compute/training/mixed_products.h"
#include "compute/training/train_run.h"
#include "tests/training/gradcheck.h"
#include "tests/training/session_checks.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

using namespace convscope;
using namespace convscope::test;
using convscope::cpu_training::roundedTo;

namespace {

// A parameter of the materialised network's shape with these values.
std::shared_ptr<const Tensor> filled(const std::shared_ptr<const Tensor>& like, const std::vector<float>& values)
{
    auto t = std::make_shared<Tensor>(like->shape());
    REQUIRE(values.size() == size_t(t->numel()));
    std::copy(values.begin(), values.end(), t->data());
    return t;
}

std::unique_ptr<TrainingSession> cpuSession(
    const std::string& algorithm, MathMode math, const std::string& lossScale = {})
{
    SessionOptions o;
    o.math = math;
    if (!lossScale.empty())
        o.extra["loss_scale"] = lossScale;
    return BackendRegistry::instance().find("cpu")->createTrainingSession(algorithm, o);
}

} // namespace

TEST_CASE("mixed precision: rounding to fp16 and bf16, nearest with ties to even", "[training][mixed]")
{
    CHECK(roundedTo(1.0f + 0x1p-12f, MathMode::BF16) == 1.0f);
    CHECK(roundedTo(1.0f + 0x1p-12f, MathMode::FP16) == 1.0f);
    CHECK(roundedTo(0.5f + 0x1p-11f, MathMode::FP16) == 0.5f + 0x1p-11f); // an fp16 value
    CHECK(roundedTo(0.5f + 0x1p-11f, MathMode::BF16) == 0.5f);
    CHECK(roundedTo(1.0f + 0x1p-8f, MathMode::BF16) == 1.0f); // a tie: to the even neighbour
    CHECK(roundedTo(1.0f + 3 * 0x1p-8f, MathMode::BF16) == 1.0f + 0x1p-6f);
    CHECK(roundedTo(-1.0f - 0x1p-7f - 0x1p-9f, MathMode::BF16) == -1.0f - 0x1p-7f);
    CHECK(std::isinf(roundedTo(70000.0f, MathMode::FP16))); // past fp16's 65504
    CHECK(roundedTo(1e30f, MathMode::BF16) == Approx(1e30f).epsilon(4e-3)); // bf16 has FP32's range
    CHECK(roundedTo(0x1p-24f, MathMode::FP16) == 0x1p-24f); // fp16's smallest subnormal
    CHECK(std::isnan(roundedTo(std::numeric_limits<float>::quiet_NaN(), MathMode::BF16)));
    CHECK(roundedTo(1.0f + 0x1p-12f, MathMode::FP32) == 1.0f + 0x1p-12f);
    CHECK(roundedTo(65519.0f, MathMode::FP16) == 65504.0f); // below the halfway point to 65536
    CHECK(std::isinf(roundedTo(-65520.0f, MathMode::FP16)));
    CHECK(roundedTo(3 * 0x1p-25f, MathMode::FP16) == 0x1p-23f); // a subnormal tie, to even
    CHECK(std::signbit(roundedTo(-0x1p-30f, MathMode::FP16))); // -0

    // Every 997th float bit pattern (4.3 million values, every exponent): FP16 as _Float16's conversion rounds it
    // (the compiler's, nearest even), BF16 as the same rule at 16 dropped bits in double.
    int64_t checked = 0, differ = 0;
    for (uint64_t b = 0; b <= 0xFFFFFFFFull; b += 997) {
        const float v = std::bit_cast<float>(uint32_t(b));
        if (std::isnan(v))
            continue;
        const float half = float(static_cast<_Float16>(v));
        const float got = roundedTo(v, MathMode::FP16);
        differ += !(got == half && std::signbit(got) == std::signbit(half));
        ++checked;
    }
    INFO(checked << " values");
    CHECK(differ == 0);
}

TEST_CASE("mixed precision: a linear layer reads and writes its tensors rounded, its weight gradient stays FP32",
    "[training][mixed]")
{
    // y = x·Wᵀ + b for 2 rows of 3 features, 2 outputs. Every value carries bits past bf16's 8 (some past fp16's 11).
    Network net;
    net.name = "one linear layer";
    net.input = { 2, 3, 1, 1, true, "random:1" };
    Layer fc;
    fc.name = "fc";
    fc.spec = Linear { 2, true };
    net.layers.push_back(fc);
    ShapeReport shapes = inferShapes(net);
    REQUIRE(shapes.ok());
    materializeParameters(net, shapes);
    const std::vector<float> w = { 0.5f + 0x1p-11f, -0.75f + 0x1p-12f, 1.25f + 0x1p-9f, //
        -0.375f - 0x1p-10f, 0.625f + 0x1p-13f, 0.875f - 0x1p-11f };
    const std::vector<float> b = { 0x1p-7f + 0x1p-14f, -0.25f - 0x1p-12f };
    net.layers[0].weight = filled(net.layers[0].weight, w);
    net.layers[0].bias = filled(net.layers[0].bias, b);
    Tensor x(Shape::features(2, 3));
    const std::vector<float> xv = { 1.0f + 0x1p-12f, 0.5f - 0x1p-10f, -2.0f + 0x1p-9f, //
        0.75f + 0x1p-8f, -1.5f - 0x1p-11f, 0.25f + 0x1p-13f };
    std::copy(xv.begin(), xv.end(), x.data());
    Tensor gy(Shape::features(2, 2));
    const std::vector<float> gyv = { 0.125f + 0x1p-12f, -0.5f - 0x1p-11f, 0.3f, -0.7f };
    std::copy(gyv.begin(), gyv.end(), gy.data());

    for (const MathMode math : { MathMode::BF16, MathMode::FP16 })
        for (const char* algorithm : { "direct", "im2col_gemm" }) {
            INFO(mathModeName(math) << " on cpu." << algorithm);
            const auto r = [math](float v) { return double(roundedTo(v, math)); };
            auto session = cpuSession(algorithm, math, "1"); // fp16: a loss scale of 1 leaves the gradients as they are
            TrainingOptions options;
            options.inputGradient = true;
            session->prepare(net, shapes, options);
            CHECK(session->metadata().at("math").rfind(mathModeName(math) + " mixed precision", 0) == 0);
            std::vector<LayerPhaseMs> times;
            const Tensor y = session->forwardPass(x, 1, times);
            session->zeroGradients();
            session->setLossScale(1);
            session->backwardPass(gy, 1, times);
            const Tensor gw = session->parameterGradient({ 0, "weight" });
            const Tensor gb = session->parameterGradient({ 0, "bias" });
            const Tensor gx = session->inputGradient();
            for (int row = 0; row < 2; ++row)
                for (int o = 0; o < 2; ++o) {
                    double sum = b[size_t(o)]; // the bias stays FP32
                    for (int i = 0; i < 3; ++i)
                        sum += r(xv[size_t(row * 3 + i)]) * r(w[size_t(o * 3 + i)]);
                    CHECK(y.data()[row * 2 + o] == roundedTo(float(sum), math)); // the output rounded
                }
            for (int o = 0; o < 2; ++o) {
                double bias = 0;
                for (int row = 0; row < 2; ++row)
                    bias += r(gyv[size_t(row * 2 + o)]);
                CHECK(gb.data()[o] == Approx(bias).epsilon(1e-6)); // from the rounded output gradient, in FP32
                for (int i = 0; i < 3; ++i) {
                    double sum = 0;
                    for (int row = 0; row < 2; ++row)
                        sum += r(gyv[size_t(row * 2 + o)]) * r(xv[size_t(row * 3 + i)]);
                    CHECK(gw.data()[o * 3 + i] == Approx(sum).epsilon(1e-6));
                }
            }
            // Not rounded: this one's value has bits past bf16's and fp16's precision.
            CHECK(roundedTo(gw.data()[0], math) != gw.data()[0]);
            for (int row = 0; row < 2; ++row)
                for (int i = 0; i < 3; ++i) {
                    double sum = 0;
                    for (int o = 0; o < 2; ++o)
                        sum += r(gyv[size_t(row * 2 + o)]) * r(w[size_t(o * 3 + i)]);
                    CHECK(gx.data()[row * 3 + i] == roundedTo(float(sum), math)); // the input gradient rounded
                }
        }
}

TEST_CASE("mixed precision: LeNet-5 trains in fp16 and bf16 on both CPU algorithms, which agree, off FP32's path",
    "[training][mixed]")
{
    Network net = loadNetwork(examplesDir() / "lenet5.json");
    net.input.batch = 4;
    const Tensor input = randomTensor(net.input.shape(), 1000);
    const Tensor target = classTargets(4, 10);
    TrainRunOptions opt;
    opt.selections = { Selection::parse("cpu.direct"), Selection::parse("cpu.im2col_gemm") };
    opt.training.optimizer.lr = 0.1;
    opt.training.optimizer.momentum = 0.9;
    opt.steps = 4;
    opt.warmup = 0;
    const TrainResult fp32 = trainNetwork(net, input, target, opt);
    for (const MathMode math : { MathMode::BF16, MathMode::FP16 }) {
        INFO(mathModeName(math));
        opt.session.math = math;
        const TrainResult r = trainNetwork(net, input, target, opt);
        REQUIRE(r.selections.size() == 2);
        for (const SelectionTraining& s : r.selections) {
            INFO(s.selection.str());
            CHECK(s.steps.back().loss < s.steps.front().loss);
            for (const StepResult& step : s.steps) {
                CHECK_FALSE(step.skipped);
                CHECK(step.lossScale == (math == MathMode::FP16 ? 65536.0 : 0.0));
            }
        }
        // Both round the same tensors; their sums (double, FP32) differ below the 16-bit outputs' rounding, so the
        // first forward agrees. Where the two sums straddle a rounding boundary the outputs are one 16-bit step apart,
        // which can move a max pool's pick: in fp16 (steps 8× finer than bf16's) that happened here within 4 steps
        // (parameters 7.8e-4 apart; bf16 under 1e-5).
        CHECK(r.selections[1].steps[0].loss == Approx(r.selections[0].steps[0].loss).epsilon(1e-6));
        CHECK(r.selections[1].maxParamRelL2 < (math == MathMode::FP16 ? 2e-3 : 1e-5));
        // The mode does move the step: the first loss differs from FP32's by more than float reorderings would.
        const double loss = r.selections[0].steps[0].loss, reference = fp32.selections[0].steps[0].loss;
        CHECK(std::abs(loss - reference) > 1e-5 * std::abs(reference));
        CHECK(std::abs(loss - reference) < 2e-2 * std::abs(reference));
    }
}

TEST_CASE(
    "mixed precision: fp16 skips a step whose scaled gradients overflow and halves the scale", "[training][mixed]")
{
    Network net = loadNetwork(examplesDir() / "lenet5.json");
    net.input.batch = 2;
    ShapeReport shapes = inferShapes(net);
    materializeParameters(net, shapes);
    const Tensor input = randomTensor(shapes.input, 1200);
    const Tensor target = classTargets(2, 10);
    auto session = cpuSession("im2col_gemm", MathMode::FP16, "1e30");
    CHECK(session->lossScale() == 1e30);
    TrainingOptions options;
    options.optimizer.lr = 0.1;
    session->prepare(net, shapes, options);
    const Network before = session->trainedNetwork();
    // 1e30 overflows fp16 at the first rounded gradient: skipped, nothing changed, the scale halved each time.
    const StepResult first = session->step(input, target, 1);
    CHECK(first.skipped);
    CHECK(first.lossScale == 1e30);
    CHECK(session->step(input, target, 2).lossScale == 5e29);
    const Network after = session->trainedNetwork();
    for (size_t i = 0; i < before.layers.size(); ++i)
        if (before.layers[i].weight) {
            INFO(before.layers[i].name);
            CHECK(relL2(*after.layers[i].weight, *before.layers[i].weight) == 0.0);
        }
    // From 65536 the same step runs, and its gradients are reported unscaled (as GradScaler's unscale_ leaves them):
    // as a scale of 1 gives them, less what fp16 loses below its normal range at that scale.
    auto scaled = cpuSession("im2col_gemm", MathMode::FP16);
    auto unscaled = cpuSession("im2col_gemm", MathMode::FP16, "1");
    scaled->prepare(net, shapes, options);
    unscaled->prepare(net, shapes, options);
    const StepResult ran = scaled->step(input, target, 1);
    CHECK_FALSE(ran.skipped);
    CHECK(ran.lossScale == 65536);
    CHECK(unscaled->step(input, target, 1).lossScale == 1);
    for (const ParameterRef& p : scaled->parameters()) {
        INFO(net.layers[p.layer].name << "." << p.name);
        CHECK(relL2(scaled->parameterGradient(p), unscaled->parameterGradient(p)) < 1e-4);
    }
    // reset() starts the scaler over, as a new GradScaler.
    session->reset();
    CHECK(session->step(input, target, 1).lossScale == 1e30);
}

TEST_CASE(
    "mixed precision: the DCGAN loop on the CPU in fp16 (one GradScaler for both optimizers) and bf16 stays within "
    "the half types' rounding of PyTorch's",
    "[training][mixed][gan]")
{
    const DcganReference d = loadDcganReference();
    // The float64 reference against the rounded products (FP32 masters, Adam). Measured here (2026-11-30), both
    // algorithms: the worst tensor 1.09e-3 from PyTorch's in fp16, 1.22e-2 in bf16 (cudnn.auto's half activations on
    // the H200: 8.5e-4 and 1.2e-2).
    for (const char* algorithm : { "direct", "im2col_gemm" })
        checkDcganHalfModes(d, { "cpu", algorithm, false });
    // 1e30 overflows at the loss's gradient: both updates skipped at every step, the scale halved once a step, no
    // parameter moved.
    checkDcganOverflowSkipsEveryStep(
        d, runDcganReference(d, { "cpu", "im2col_gemm", false }, 0, dcganHalfSession(MathMode::FP16, "1e30")));
}
