// The onednn backend's training session (backends/onednn/onednn_training.h) with the CPU session's checks
// (tests/training): every PyTorch reference case (float64 gradients, 1e-5 relative L2), LeNet-5 trained beside
// cpu.direct, the DCGAN loop against PyTorch (the phased step), the phased step against step(); then what is oneDNN's
// own: every kind oneDNN trains beside cpu.direct with values on the activations' kinks, max pooling's ties, which
// layers the notes say run where, and the refusals (another math mode, another algorithm, a fused convolution).
// Without the module (libdnnl not installed) every case prints "SKIPPED: <reason>".
#include "compute/cpu_threads.h"
#include "compute/error.h"
#include "tests/kernels/gpu_test_support.h"
#include "tests/training/session_checks.h"
#include "tests/training/torch_reference_cases.h"

using namespace convscope;
using namespace convscope::test;

namespace {
// One OpenMP thread for the cases of many tiny primitives: each primitive (and reorder) is a parallel region, and on a
// loaded machine (CI's two cores under ctest -j2) a region can wait a scheduler quantum for a descheduled second
// thread — seconds in all for these cases, 0.1 s on one thread. LeNet-5 and the DCGAN keep every core.
struct OneThread {
    OneThread() { setCpuThreadCount(1); }
    ~OneThread() { setCpuThreadCount(0); }
    OneThread(const OneThread&) = delete;
    OneThread& operator=(const OneThread&) = delete;
};
} // namespace

TEST_CASE("onednn.auto: one training step matches PyTorch's gradients and updated parameters", "[onednn][training]")
{
    auto onednn = backendOrSkip("onednn");
    if (!onednn)
        return;
    const OneThread one;
    CHECK(checkTorchReferenceCases(*onednn, "auto") >= 8);
}

TEST_CASE("onednn.auto: LeNet-5 trains beside cpu.direct, and the DCGAN loop matches PyTorch", "[onednn][training]")
{
    auto onednn = backendOrSkip("onednn");
    if (!onednn)
        return;
    const TrainResult r = checkLenetBesideDirect(Selection::parse("onednn.auto"));
    CHECK(r.selections[1].metadata.at("algorithm") == "onednn.auto");
    checkDcganReference(Selection::parse("onednn.auto"));
    checkPhasedEqualsStep(*onednn, "auto");
}

namespace {
// Two MSE steps of `net` on onednn.auto and cpu.direct (SGD, lr 0.1, the input gradient asked for): the losses, the
// input and every parameter gradient of the second step, and the parameters and running statistics after it, within
// `tolerance` (relative L2). Returns the onednn session's metadata.
// `planes`: the input holds one value per channel plane (else random values). `inputGradient` false: the first
// layer's backward-data is skipped, so a batch norm or prelu there runs its one backward as backward-weights.
std::map<std::string, std::string> stepBesideDirect(Backend& onednn, Network net, double tolerance, bool planes = false,
    bool inputGradient = true, const SessionOptions& options = {}, const SessionOptions& referenceOptions = {})
{
    const ShapeReport shapes = inferShapes(net);
    INFO(net.name << " " << shapes.firstError());
    REQUIRE(shapes.ok());
    materializeParameters(net, shapes);
    Tensor input = randomTensor(shapes.input, 7100);
    if (planes) {
        const int64_t area = shapes.input.h * shapes.input.w;
        for (int64_t i = 0; i < input.numel(); ++i)
            input.data()[i] = input.data()[i / area * area];
    }
    const Tensor target = randomTensor(shapes.layers.back().out, 7101);
    TrainingOptions to;
    to.loss = LossKind::MSE;
    to.optimizer.lr = 0.1;
    to.inputGradient = inputGradient;
    auto reference = BackendRegistry::instance().find("cpu")->createTrainingSession("direct", referenceOptions);
    auto session = onednn.createTrainingSession("auto", options);
    reference->prepare(net, shapes, to);
    session->prepare(net, shapes, to);
    for (int64_t step = 1; step <= 2; ++step) {
        const double a = reference->step(input, target, step).loss, b = session->step(input, target, step).loss;
        CHECK(b == Approx(a).epsilon(tolerance));
    }
    if (inputGradient)
        CHECK(relL2(session->inputGradient(), reference->inputGradient()) < tolerance);
    for (const ParameterRef& ref : reference->parameters()) {
        INFO("gradient of " << net.layers[ref.layer].name << "." << ref.name);
        CHECK(relL2Flat(session->parameterGradient(ref), reference->parameterGradient(ref)) < tolerance);
    }
    const Network x = reference->trainedNetwork(), y = session->trainedNetwork();
    for (size_t i = 0; i < x.layers.size(); ++i)
        for (const auto& [p, q] : { std::pair { x.layers[i].weight, y.layers[i].weight },
                 { x.layers[i].bias, y.layers[i].bias }, { x.layers[i].runningMean, y.layers[i].runningMean },
                 { x.layers[i].runningVar, y.layers[i].runningVar } })
            if (p && q) {
                INFO("after the steps: " << x.layers[i].name);
                CHECK(relL2Flat(*q, *p) < tolerance);
            }
    return session->metadata();
}

// The metadata's layer notes by layer name ("layer 3 relu" → "oneDNN: forward ...").
std::map<std::string, std::string> notesByLayer(const std::map<std::string, std::string>& meta)
{
    std::map<std::string, std::string> notes;
    for (const auto& [key, note] : meta)
        if (key.rfind("layer ", 0) == 0)
            notes[key.substr(key.find(' ', 6) + 1)] = note;
    return notes;
}
} // namespace

TEST_CASE("onednn.auto trains every kind it maps beside cpu.direct, kinks and ties included", "[onednn][training]")
{
    auto onednn = backendOrSkip("onednn");
    if (!onednn)
        return;
    const OneThread one;
    // Spread convolutions push values well past the bends; relu feeds relu6 exact zeros (its lower bound) and relu6
    // feeds hardtanh exact sixes (its upper bound), where the gradient is 0 in PyTorch.
    NetworkBuilder b("kinds", 2, 3, 9, 9, false, 1, 7000);
    Conv2d c1 = conv2dSpec(6, { 3, 3 }, explicitPadding(1, 0, 2, 1));
    c1.groups = 3;
    c1.stride = { 1, 2 };
    c1.bias = false; // before batch norm its true gradient is 0: both sessions would compare rounding noise
    b.add("c1", c1);
    b.add("bn", BatchNorm2d {});
    b.spread("s1", 6);
    b.add("relu", ReLU {});
    b.add("relu6", ReLU6 {});
    Hardtanh ht;
    ht.min_val = -1;
    ht.max_val = 6;
    b.add("ht", ht);
    MaxPool2d mp;
    mp.kernel_size = { 3, 3 };
    mp.stride = Pair { 2, 2 };
    mp.padding = explicitPadding(1, 1, 1, 1);
    mp.ceil_mode = true;
    b.add("mp", mp);
    b.spread("s2", 4);
    b.add("leaky", LeakyReLU { 0.2 });
    b.add("prelu", PReLU { 4 });
    Conv2d c2 = conv2dSpec(4, { 3, 3 }, explicitPadding(2, 2, 2, 2));
    c2.dilation = { 2, 2 };
    c2.bias = false;
    b.add("c2", c2);
    b.add("elu", ELU { 0.7 });
    ConvTranspose2d ct;
    ct.out_channels = 4;
    ct.kernel_size = { 3, 3 };
    ct.stride = { 2, 2 };
    ct.padding = explicitPadding(1, 1, 1, 1);
    ct.output_padding = { 1, 1 };
    b.add("ct", ct);
    b.add("tanh", Tanh {});
    b.spread("s3", 4);
    b.add("silu", SiLU {});
    b.add("gelu", GELU {});
    b.add("hswish", Hardswish {}); // the CPU's code (oneDNN's gradient at ±3 is not PyTorch's)
    AvgPool2d ap;
    ap.kernel_size = { 3, 3 };
    ap.stride = Pair { 2, 2 };
    ap.padding = explicitPadding(1, 1, 1, 1);
    ap.count_include_pad = false;
    b.add("ap", ap);
    b.add("sig", Sigmoid {});
    AvgPool2d ai = ap;
    ai.count_include_pad = true;
    b.add("ai", ai);
    b.add("gap", GlobalAvgPool2d {});
    b.add("flat", Flatten {});
    Linear fc;
    fc.out_features = 5;
    b.add("fc", fc);
    b.add("lsm", LogSoftmax {});
    // 1e-4 as the cudnn session's chain of every kind (tests/kernels/cudnn_training_test.cpp): FP32 through 28 layers
    // and two updates against cpu.direct's double sums; a gradient taken at a kink PyTorch's way or not differs by
    // far more (one element of a few hundred: ~1e-2).
    const auto meta = stepBesideDirect(*onednn, b.net, 1e-4);
    auto notes = notesByLayer(meta);
    for (const char* layer : { "c1", "bn", "s1", "relu", "relu6", "ht", "mp", "leaky", "prelu", "c2", "elu", "ct",
             "tanh", "silu", "gelu", "ap", "sig", "ai", "gap", "fc", "lsm" }) {
        INFO(layer << ": " << notes[layer]);
        CHECK(notes[layer].rfind("oneDNN: forward", 0) == 0);
    }
    CHECK_THAT(notes["hswish"], Catch::Contains("CPU's training code") && Catch::Contains("±3"));
    CHECK_THAT(notes["flat"], Catch::Contains("CPU's training code"));

    // Volumes: conv3d (groups, stride, padding), batchnorm3d, maxpool3d with ceil_mode, conv_transpose3d with
    // output_padding, avgpool3d without counting the padding, global pooling of the volume.
    NetworkBuilder v("volume kinds", 2, 2, 5, 6, false, 1, 7400);
    v.depth(4);
    Conv3d c3;
    c3.out_channels = 4;
    c3.groups = 2;
    c3.stride = { 1, 2, 1 };
    c3.padding = explicitPadding3d(1, 0, 1, 1, 0, 1);
    c3.bias = false;
    v.add("c3", c3);
    v.add("bn3", BatchNorm3d {});
    MaxPool3d m3;
    m3.kernel_size = { 2, 2, 2 };
    m3.ceil_mode = true;
    v.add("mp3", m3);
    ConvTranspose3d t3;
    t3.out_channels = 3;
    t3.stride = { 2, 2, 2 };
    t3.padding = explicitPadding3d(1, 1, 1, 1, 1, 1);
    t3.output_padding = { 1, 0, 1 };
    v.add("ct3", t3);
    AvgPool3d a3;
    a3.kernel_size = { 3, 3, 3 };
    a3.stride = Triple { 2, 2, 2 };
    a3.padding = explicitPadding3d(1, 1, 1, 1, 1, 1);
    a3.count_include_pad = false;
    v.add("ap3", a3);
    v.add("gap3", GlobalAvgPool3d {});
    const auto vmeta = stepBesideDirect(*onednn, v.net, 1e-4);
    const auto vnotes = notesByLayer(vmeta);
    for (const char* layer : { "c3", "bn3", "mp3", "ct3", "ap3", "gap3" }) {
        INFO(layer << ": " << vnotes.at(layer));
        CHECK(vnotes.at(layer).rfind("oneDNN: forward", 0) == 0);
    }

    // Max pooling over planes of one value: every window ties, and PyTorch's CPU kernel (and cpu.direct) sends the
    // gradient to the window's first element; a 1×1 convolution before it carries that into the input gradient.
    NetworkBuilder t("ties", 2, 2, 6, 6, false, 1, 7200);
    t.add("c", conv2dSpec(3, { 1, 1 }, explicitPadding(0, 0, 0, 0)));
    MaxPool2d tp;
    tp.kernel_size = { 3, 3 };
    tp.stride = Pair { 2, 2 };
    tp.padding = explicitPadding(1, 1, 1, 1);
    t.add("mp", tp);
    stepBesideDirect(*onednn, t.net, 1e-6, true);

    // Batch norm and prelu as the first layer without the input gradient: their one backward runs as backward-weights.
    for (const bool bnFirst : { true, false }) {
        NetworkBuilder f(bnFirst ? "bn first" : "prelu first", 3, 2, 5, 5, false, 1, 7500);
        bnFirst ? f.add("first", BatchNorm2d {}) : f.add("first", PReLU { 2 });
        f.add("c", conv2dSpec(3, { 3, 3 }, explicitPadding(1, 1, 1, 1)));
        stepBesideDirect(*onednn, f.net, 1e-5, false, false);
    }
}

TEST_CASE("onednn.auto training refuses what it cannot train, by name", "[onednn][training]")
{
    auto onednn = backendOrSkip("onednn");
    if (!onednn)
        return;
    SessionOptions fp16;
    fp16.math = MathMode::FP16;
    CHECK_THROWS_WITH(onednn->createTrainingSession("auto", fp16), Catch::Contains("training in fp16 is unsupported"));
    CHECK_THROWS_AS(onednn->createTrainingSession("gemm", {}), UnsupportedError);
    NetworkBuilder fused("fused", 1, 2, 6, 6, false, 1, 7300);
    Conv2d conv = conv2dSpec(2, { 3, 3 }, explicitPadding(1, 1, 1, 1));
    conv.fused_activation.kind = FusedActivation::Kind::ReLU;
    fused.add("c_fused", conv);
    Network v = fused.net;
    const ShapeReport vs = inferShapes(v);
    REQUIRE(vs.ok());
    materializeParameters(v, vs);
    auto session = onednn->createTrainingSession("auto", {});
    CHECK_THROWS_WITH(session->prepare(v, vs, {}), Catch::Contains("onednn.auto") && Catch::Contains("c_fused"));
}

TEST_CASE("onednn.auto --math bf16 trains as PyTorch's CPU autocast, within bf16's rounding of cpu.direct's FP32",
    "[onednn][training][bf16]")
{
    auto onednn = backendOrSkip("onednn");
    if (!onednn)
        return;
    SessionOptions bf16;
    bf16.math = MathMode::BF16;
    try {
        onednn->createTrainingSession("auto", bf16);
    } catch (const UnsupportedError& e) {
        // A CPU without AVX512-BF16 or AMX: refused by name, never emulated.
        CHECK_THAT(e.what(), Catch::Contains("onednn bf16") && Catch::Contains("this CPU has"));
        std::cout << "SKIPPED: " << e.what() << std::endl;
        return;
    }
    const OneThread one;
    // Every kind whose products go to bf16 — conv2d with groups and stride, a transposed convolution, linear — with
    // batch norm and an activation between them running in FP32 on the bf16-rounded outputs.
    NetworkBuilder b("bf16_kinds", 2, 4, 10, 10, false, 1, 7400);
    Conv2d c1 = conv2dSpec(8, { 3, 3 }, explicitPadding(1, 1, 1, 1));
    c1.groups = 2;
    c1.stride = { 2, 1 };
    c1.bias = false; // before batch norm its true gradient is 0: both sessions would compare rounding noise
    b.add("c1", c1);
    b.add("bn", BatchNorm2d {});
    b.add("relu", ReLU {});
    ConvTranspose2d up;
    up.out_channels = 4;
    up.kernel_size = { 2, 2 };
    up.stride = { 2, 1 };
    up.bias = true;
    b.add("up", up);
    b.add("flat", Flatten {});
    Linear fc;
    fc.out_features = 6;
    fc.bias = true;
    b.add("fc", fc);
    // Each element of a bf16 operand keeps 8 significant bits (relative 2^-8 ≈ 3.9e-3); the products' sums are FP32.
    // Measured on this machine (AVX512-BF16, oneDNN 2.6.3, 2026-11-29): the worst of the input and parameter
    // gradients of the second step and the parameters after it was 1.18e-2 from FP32's (ten of them above 1e-3), the
    // second step's loss 0.6 % off. The bound leaves room over that: it holds the path near FP32 within bf16's
    // rounding; the notes below check that the primitives do take bf16.
    // The weight and the data gradient each way (--option weight_gradient, data_gradient): oneDNN's bf16 primitive,
    // the FP32 one on operands rounded to bf16 (the data gradient's result rounded to bf16 too), and the faster of the
    // two as timed at prepare (the default).
    for (const std::string key : { "weight_gradient", "data_gradient" })
        for (const std::string setting : { "bf16", "fp32", "auto" }) {
            INFO("--option " << key << "=" << setting);
            SessionOptions pinned = bf16;
            pinned.extra[key] = setting;
            const auto meta = stepBesideDirect(*onednn, b.net, 4e-2, false, true, pinned);
            CHECK_THAT(meta.at("math"), Catch::StartsWith("bf16 mixed precision"));
            const auto notes = notesByLayer(meta);
            const std::string what = key == "data_gradient" ? "backward-data" : "backward-weights";
            for (const char* layer : { "c1", "up", "fc" }) {
                INFO(layer << ": " << notes.at(layer));
                CHECK_THAT(notes.at(layer), Catch::Contains("bf16 operands"));
                if (setting == "auto")
                    CHECK_THAT(
                        notes.at(layer), Catch::Contains(what + " measured at prepare") && Catch::Contains(" kept"));
                else
                    CHECK_THAT(
                        notes.at(layer), Catch::Contains(what + ": " + setting + " (--option " + key + "=" + setting));
            }
            CHECK_THAT(notes.at("bn"), !Catch::Contains("bf16")); // batch norm stays FP32 here
        }
    // cpu.direct in bf16 rounds the same tensors (compute/training/mixed_products.h) and sums in double: the same
    // semantics, so the two agree far inside the bound against FP32 above (measured on this machine, 2026-11-30: the
    // losses, gradients and parameters within 8.1e-8 of each other; a sum straddling a bf16 rounding boundary would
    // move one element by 2^-8, which the bound still leaves room for).
    for (const std::string setting : { "bf16", "fp32" }) {
        INFO("beside cpu.direct in bf16, --option weight_gradient=data_gradient=" << setting);
        SessionOptions pinned = bf16;
        pinned.extra["weight_gradient"] = pinned.extra["data_gradient"] = setting;
        stepBesideDirect(*onednn, b.net, 1e-5, false, true, pinned, bf16);
    }
    for (const char* key : { "weight_gradient", "data_gradient" }) {
        SessionOptions wrong = bf16;
        wrong.extra[key] = "fp64";
        CHECK_THROWS_WITH(onednn->createTrainingSession("auto", wrong), Catch::Contains(std::string(key) + "=fp64"));
    }
}
