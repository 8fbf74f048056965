// The cross-backend test's backward (issue 33): one training step of every case the forward test runs (the same fixed
// and seeded random cases per layer kind, and the networks: case_selection.h) on every backend and algorithm the
// registry lists that trains (none is named here, so a new backend's training session is tested without an edit),
// against cpu.direct's step: the loss, the input's gradient and every parameter's gradient. Each backend's own training
// tests hold a few networks to cpu.direct; this holds every kind's backward, at the awkward shapes the forward is held
// at, on every backend at once.
//
// The step: MSE toward a seeded random target of the output's shape (every kind's output can be a regression's), SGD
// with momentum, dropout's masks from one seed (the same on every backend), batch norm in training mode, the
// parameters materialised once and handed to both sessions. A case with nothing to train (one activation, a pool, a
// softmax) gets a layer with parameters in front of it that keeps the input's shape — a 1×1 convolution (C → C) on an
// image, 1×1×1 on a volume, a linear layer on the last axis (F → F) on any other rank; he_uniform, a fixed seed — so
// the kind's backward still runs, checked through that layer's gradients and the input's.
//
// Each gradient is compared by ‖value − cpu.direct's‖ / max(‖cpu.direct's‖, kScaleFloor · the case's gradient scale):
// relative L2, except for a gradient that cancels to a small part of the case's (a bias before a softmax along its
// axis or before a batch norm is exactly 0), which is rounding noise on both sides and is measured against the case's
// scale. FP32 holds every gradient to its bound. In the math modes ([math]: tf32, fp16, bf16, where a training session
// says it computes in one) a rounding of a half type flips discrete choices — a max pool's pick, a ReLU's or a clamp's
// side — and moves that case's gradients far: there a case beyond the mode's bound is printed with its numbers, and a
// kind (an op, for unary, binary and reduce) fails when more than a quarter of its cases, and more than two, are beyond
// it, as a bug in a kind's half-precision path moves all its cases.
//
// What cpu.direct cannot train (a kind with no backward yet) is skipped and says why; what a backend's prepare()
// refuses (UnsupportedError naming the layer) is counted and printed; anything else is a failure. A backend that is not
// available here, or whose training session does not take the algorithm or the math mode, is listed as not run; when
// nothing but cpu.direct could run, the test prints "SKIPPED: <reasons>".
//
// Filters and seed as the forward test (cross_backend_test.cpp): --op conv2d,graph, --backend onednn,cpu.im2col_gemm
// (or CONVSCOPE_TEST_OP / CONVSCOPE_TEST_BACKEND), --rng-seed N (or CONVSCOPE_TEST_SEED); a case's target is drawn from
// the seed and its name, so a filter replays it. A failure names the case, the selection, the seed and the network as
// JSON (the layer in front included).
#include "compute/backend_registry.h"
#include "compute/binary.h"
#include "compute/error.h"
#include "compute/load_input.h"
#include "compute/materialize.h"
#include "compute/network_json.h"
#include "compute/reduce.h"
#include "compute/shape_inference.h"
#include "compute/training/cpu_backward_ops.h"
#include "compute/training/training.h"
#include "tests/backends/backend_cases.h"
#include "tests/backends/case_selection.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

using namespace convscope;

namespace {

constexpr uint64_t kFrontSeed = 3301; // the layer put in front of a case with nothing to train
// A gradient below this share of the case's gradient scale is measured against that share (the top comment). Measured
// in FP32 over seeds 1 to 30 and 34 (71438 gradients a selection): 39% fall below it, and those differ from
// cpu.direct's by at most 8e-6 of the scale on onednn.auto (a bias before a softmax along the axis it is constant on),
// 2e-6 on cpu.im2col_gemm, which 0.2 keeps under 1e-4 with room; 0.1 would leave 8.2e-5. A gradient below the floor
// is still held to 1e-4 · 0.2 / (its share of the scale), relative.
constexpr double kScaleFloor = 0.2;

// One case ready to train, and cpu.direct's step of it.
struct StepCase {
    std::string name;
    std::string group; // what the case is for: its kind, and the op of a unary, binary or reduce
    Network net; // parameters materialised
    ShapeReport shapes;
    Tensor input, target;
    double loss = 0;
    Tensor inputGradient;
    std::vector<ParameterRef> parameters;
    std::vector<Tensor> gradients; // parameters' order
    // The case's gradient scale: the L2 norm of all its gradients together, or of the loss's gradient (MSE's
    // 2·√(loss / N)) where that is larger (a layer in front whose weight is small shrinks all the others).
    double scale = 0;
    double largest = 0; // the largest magnitude among its gradients
};

// FP16's largest finite value: a gradient beyond it overflows fp16 at any loss scale of 1 or more.
constexpr double kFp16Max = 65504;

TrainingOptions crossStepOptions()
{
    TrainingOptions o;
    o.loss = LossKind::MSE;
    o.optimizer.kind = OptimizerSpec::Kind::SGD;
    o.optimizer.lr = 0.01;
    o.optimizer.momentum = 0.9;
    o.inputGradient = true; // the first layer's backward-data is checked too
    return o;
}

double l2Norm(const Tensor& t)
{
    double r = 0;
    for (int64_t i = 0; i < t.numel(); ++i)
        r += double(t.data()[i]) * double(t.data()[i]);
    return std::sqrt(r);
}

// ‖value − reference‖ / max(‖reference‖, floor) in double; infinite where `value` holds a NaN or an infinity.
double gradientError(const Tensor& value, const Tensor& reference, double floor)
{
    REQUIRE(value.numel() == reference.numel());
    double d = 0;
    for (int64_t i = 0; i < reference.numel(); ++i) {
        const double x = value.data()[i], y = reference.data()[i];
        if (!std::isfinite(x))
            return std::numeric_limits<double>::infinity();
        d += (x - y) * (x - y);
    }
    const double denominator = std::max(l2Norm(reference), floor);
    return denominator > 0 ? std::sqrt(d) / denominator : std::sqrt(d);
}

// A layer with parameters in front of the network, read by every layer that read the network's input, keeping its
// shape: a 1×1 convolution (C → C) in front of an image, a 1×1×1 one in front of a volume, a linear layer on the last
// axis (F → F) in front of a flat input or a tensor of another rank.
void putTrainableInFront(Network& net, const Shape& input)
{
    Layer front = makeConvLayer("front", input.c, 1, 1, 0, kFrontSeed);
    if (input.ndim() == 5) {
        Conv3d conv;
        conv.out_channels = input.c;
        conv.kernel_size = { 1, 1, 1 };
        front.spec = conv;
    } else if (input.ndim() != 4) {
        front.spec = Linear { input.dims().back(), true };
    }
    for (Layer& layer : net.layers)
        std::replace(layer.inputs.begin(), layer.inputs.end(), std::string(kNetworkInputName), front.name);
    net.layers.insert(net.layers.begin(), std::move(front));
}

// The target's seed: the run's seed and the case's name (FNV-1a), not its place in the list, which a filter changes.
uint64_t targetSeed(uint64_t seed, const std::string& name)
{
    uint64_t h = 1469598103934665603ULL ^ seed;
    for (const char ch : name)
        h = (h ^ uint64_t(uint8_t(ch))) * 1099511628211ULL;
    return h & 0x7fffffff;
}

// The case's kind (test::caseKind), with the op where one kind holds several (binary's pow and add fail apart).
std::string caseGroup(const test::NetworkCase& c)
{
    const std::string kind = test::caseKind(c);
    for (const Layer& layer : c.net.layers)
        if (layerTypeName(layer.spec) == kind) {
            if (const auto* u = std::get_if<Unary>(&layer.spec))
                return kind + " " + unaryOpName(u->op);
            if (const auto* b = std::get_if<Binary>(&layer.spec))
                return kind + " " + binaryOpName(b->op);
            if (const auto* r = std::get_if<Reduce>(&layer.spec))
                return kind + " " + reduceOpName(r->op);
            break;
        }
    return kind;
}

// cpu.direct's step of case `c` into `out`, or the reason it cannot train it.
std::string referenceStep(const test::NetworkCase& c, uint64_t seed, StepCase& out)
{
    Network net = c.net;
    for (bool inFront = false;;) {
        ShapeReport shapes = inferShapes(net);
        if (!shapes.ok())
            return "shape error: " + shapes.firstError();
        materializeParameters(net, shapes);
        auto session = BackendRegistry::instance().find("cpu")->createTrainingSession("direct", {});
        try {
            session->prepare(net, shapes, crossStepOptions());
        } catch (const UnsupportedError& e) {
            return e.what();
        } catch (const InputError& e) {
            const std::string why = e.what();
            if (inFront || why.find("no trainable") == std::string::npos)
                return why;
            putTrainableInFront(net, shapes.input);
            inFront = true;
            continue;
        }
        out.name = c.name + (inFront ? " (" + layerTypeName(net.layers.front().spec) + " in front)" : "");
        out.group = caseGroup(c);
        out.input = loadInput(net.input, net.baseDir);
        out.target = test::randomTensor(shapes.layers.back().out, targetSeed(seed, c.name));
        try {
            out.loss = session->step(out.input, out.target, 1).loss;
        } catch (const InputError& e) {
            return e.what(); // a loss or gradient that is not finite: nothing to compare
        }
        out.inputGradient = session->inputGradient();
        double sum = std::pow(l2Norm(out.inputGradient), 2);
        out.parameters = session->parameters();
        for (const ParameterRef& p : out.parameters) {
            out.gradients.push_back(session->parameterGradient(p));
            sum += std::pow(l2Norm(out.gradients.back()), 2);
        }
        out.scale = std::max(std::sqrt(sum), 2 * std::sqrt(out.loss / double(shapes.layers.back().out.numel())));
        for (const Tensor* g : { &out.inputGradient })
            for (int64_t i = 0; i < g->numel(); ++i)
                out.largest = std::max(out.largest, double(std::abs(g->data()[i])));
        for (const Tensor& g : out.gradients)
            for (int64_t i = 0; i < g.numel(); ++i)
                out.largest = std::max(out.largest, double(std::abs(g.data()[i])));
        out.net = std::move(net);
        out.shapes = std::move(shapes);
        return {};
    }
}

SessionOptions crossSessionOptions(MathMode math)
{
    SessionOptions o;
    o.math = math;
    if (math == MathMode::FP16)
        o.extra["loss_scale"] = "256"; // as cudnn_mixed_training_test: no gradient overflows, no step is skipped
    return o;
}

// Does <backend>.<algorithm> train in `math`? A session must be made (the backend's refusal, or its having no training
// session, is the reason) and, in a mode other than FP32, its metadata must name the mode (onednn trains tf32 as fp32).
std::string whyNotTrained(Backend& backend, const std::string& algorithm, MathMode math)
{
    try {
        const auto session = backend.createTrainingSession(algorithm, crossSessionOptions(math));
        if (!session)
            return "no training session";
        if (math == MathMode::FP32)
            return {};
        const auto meta = session->metadata();
        const auto it = meta.find("math");
        if (it == meta.end())
            return "its training session does not say its math";
        if (it->second.rfind(mathModeName(math), 0) != 0)
            return "trains " + it->second;
        return {};
    } catch (const UnsupportedError& e) {
        return e.what();
    }
}

// The bound against cpu.direct's FP32 step (double sums). FP32: float reorderings; Winograd's transforms (the
// algorithm's name or a layer's note, as cudnn.auto's cudnnFind may pick it) round more. Measured over seeds 1 to 30
// and 34: cpu.im2col_gemm at most 1.0e-5, onednn.auto 5.5e-5 (a bias gradient summed over 3·57·46 positions in float).
// The math modes: the bounds the backends' own mixed-precision tests hold a first step to, cudnn_mixed_training_test
// .cpp's graph of every kind (tf32 and fp16 2e-2, bf16 1e-1; onednn_training_test.cpp's 4e-2 for bf16 holds one
// network of well-conditioned layers). Measured on onednn.auto bf16 (avx512_bf16) over those seeds: 1 to 9 of ~770
// cases a run beyond 1e-1, never more than two of a kind (or op), each where a rounding flips a discrete pick: max
// pooling's and reduce max / min's (up to 0.54), binary max's (0.14), a ReLU's side ("flatten: rank 6", 0.66), a
// hardsigmoid's kink, batch norm's sums in the graphs (0.13), and pow's exponent across its hardtanh clamp (0.92 at
// every seed: the fixed case "pow, one channel first").
double trainingToleranceFor(const std::string& algorithm, MathMode math, const std::map<std::string, std::string>& meta)
{
    switch (math) {
    case MathMode::TF32:
    case MathMode::FP16:
        return 2e-2;
    case MathMode::BF16:
        return 1e-1;
    case MathMode::FP32:
        break;
    }
    bool winograd = algorithm.find("winograd") != std::string::npos;
    for (const auto& [key, value] : meta) {
        std::string note = value;
        std::transform(note.begin(), note.end(), note.begin(), [](unsigned char ch) { return char(std::tolower(ch)); });
        winograd |= key.rfind("layer ", 0) == 0 && note.find("winograd") != std::string::npos;
    }
    return winograd ? 5e-3 : 1e-4;
}

struct TrainTally {
    int checked = 0, refused = 0, beyond = 0;
    std::vector<std::string> notRun;
};

// One step of every case on <backend>.<algorithm> in `math`, against cpu.direct's.
void stepEveryCase(Backend& backend, const std::string& algorithm, MathMode math, const std::vector<StepCase>& cases,
    uint64_t seed, TrainTally& tally)
{
    const std::string selection = backend.name() + "." + algorithm;
    const bool fp32 = math == MathMode::FP32;
    int checked = 0, refused = 0, outOfRange = 0;
    double worst = 0; // the largest error of the selection, and where
    std::string worstWhere;
    std::map<std::string, std::pair<int, std::vector<std::string>>> groups; // cases run, and those beyond the bound
    for (const StepCase& c : cases) {
        INFO(c.name << " on " << selection << " in " << mathModeName(math) << ", seed " << seed
                    << "; the network: " << serializeNetwork(c.net));
        // A case whose true gradients leave fp16's range (reciprocals, divisions and powers of values near 0, a sum
        // of 10^5 values) overflows in fp16 whatever the backend: GradScaler would skip its every step.
        if (math == MathMode::FP16 && c.largest > kFp16Max) {
            ++outOfRange;
            continue;
        }
        // fp16: a step whose scaled gradients overflow is skipped, as GradScaler's rule says; GradScaler then halves
        // its scale and tries again. So does this, in strides of 16 from the starting 256 down to 1 (the mul case of
        // two ±4-scaled operands, a loss of 877, overflowed at 256 on the H200).
        SessionOptions options = crossSessionOptions(math);
        std::unique_ptr<TrainingSession> session;
        StepResult step;
        enum class Outcome { Ran, Refused, Threw } outcome = Outcome::Ran;
        for (double scale = 256;; scale /= 16) {
            if (math == MathMode::FP16)
                options.extra["loss_scale"] = std::to_string(int(scale));
            session = backend.createTrainingSession(algorithm, options);
            REQUIRE(session);
            try {
                session->prepare(c.net, c.shapes, crossStepOptions());
            } catch (const UnsupportedError& e) {
                // A refusal is fine when it names the layer; any other failure is a bug.
                const std::string why = e.what();
                CHECK(why.find("layer") != std::string::npos);
                std::cout << "refused, skipped: " << c.name << " on " << selection << " (" << mathModeName(math)
                          << "): " << why << "\n";
                outcome = Outcome::Refused;
                break;
            } catch (const std::exception& e) {
                FAIL_CHECK("prepare() threw: " << e.what());
                outcome = Outcome::Threw;
                break;
            }
            try {
                step = session->step(c.input, c.target, 1);
            } catch (const std::exception& e) {
                FAIL_CHECK("the step threw: " << e.what());
                outcome = Outcome::Threw;
                break;
            }
            // The input gradient is no parameter, so GradScaler does not check it; scaled, it can overflow where
            // the parameters' do not (a reciprocal's, on the CPU's fp16): tried again at a lower scale too.
            const bool inputOverflowed = math == MathMode::FP16 && !cpu::grad::allFinite(session->inputGradient());
            if ((!step.skipped && !inputOverflowed) || math != MathMode::FP16 || scale < 2)
                break;
            std::cout << "fp16: " << c.name << " on " << selection << " overflowed at loss scale " << int(scale)
                      << (step.skipped ? " (the step skipped, as GradScaler's)" : " (the input gradient)")
                      << "; again at " << int(scale / 16) << "\n";
        }
        if (outcome == Outcome::Refused)
            ++refused;
        if (outcome != Outcome::Ran)
            continue;
        const double tolerance = trainingToleranceFor(algorithm, math, session->metadata());
        INFO("loss " << step.loss << " against cpu.direct's " << c.loss << " (bound " << tolerance << ")");
        CHECK(std::abs(step.loss - c.loss) <= tolerance * std::max(1.0, std::abs(c.loss)));
        CHECK_FALSE(step.skipped);
        const std::vector<ParameterRef> parameters = session->parameters();
        REQUIRE(parameters.size() == c.parameters.size());
        double caseWorst = 0;
        std::string caseWorstWhat;
        // Each gradient: held to the bound in FP32; in the math modes checked to be finite, the case's worst kept.
        const auto check = [&](const Tensor& value, const Tensor& reference, const std::string& what) {
            const double error = gradientError(value, reference, kScaleFloor * c.scale);
            INFO(what << ": error " << error << " (bound " << tolerance << ")");
            CHECK(std::isfinite(error));
            if (fp32)
                CHECK(error <= tolerance);
            if (error >= caseWorst) {
                caseWorst = error;
                caseWorstWhat = what;
            }
            ++checked;
        };
        check(session->inputGradient(), c.inputGradient, "the input gradient");
        for (size_t p = 0; p < parameters.size(); ++p) {
            REQUIRE(parameters[p].layer == c.parameters[p].layer);
            REQUIRE(parameters[p].name == c.parameters[p].name);
            check(session->parameterGradient(parameters[p]), c.gradients[p],
                c.net.layers[parameters[p].layer].name + "." + parameters[p].name);
        }
        if (caseWorst >= worst) {
            worst = caseWorst;
            worstWhere = c.name + ", " + caseWorstWhat;
        }
        auto& [run, beyond] = groups[c.group];
        ++run;
        if (!fp32 && caseWorst > tolerance) {
            std::ostringstream line;
            line << c.name << ": " << caseWorstWhat << " " << caseWorst << " (bound " << tolerance << ")";
            beyond.push_back(line.str());
            std::cout << "beyond " << mathModeName(math) << "'s bound on " << selection << ": " << line.str() << "\n";
        }
    }
    // The math modes: a kind (an op of one) fails when more than a quarter of its cases, and more than two, are beyond
    // the bound.
    int beyondCount = 0;
    for (const auto& [group, counts] : groups) {
        const auto& [run, beyond] = counts;
        beyondCount += int(beyond.size());
        std::string which;
        for (const std::string& line : beyond)
            which += "\n  " + line;
        INFO(group << " on " << selection << " in " << mathModeName(math) << ", seed " << seed << ": " << beyond.size()
                   << " of " << run << " cases beyond the bound:" << which);
        CHECK(int(beyond.size()) <= std::max(2, run / 4));
    }
    std::cout << selection << " (" << mathModeName(math) << "): " << checked
              << " gradients checked against cpu.direct (worst " << worst << ": " << worstWhere << "), " << refused
              << " cases refused by prepare()";
    if (!fp32)
        std::cout << ", " << beyondCount << " beyond the bound";
    if (outOfRange)
        std::cout << ", " << outOfRange << " left out (a gradient past fp16's 65504)";
    std::cout << std::endl;
    tally.checked += checked;
    tally.refused += refused;
    tally.beyond += beyondCount;
}

// Every registered backend and algorithm the filter selects, in each of `modes` it trains in.
void trainRegistry(const std::vector<MathMode>& modes)
{
    struct Run {
        Backend* backend;
        std::string algorithm;
        MathMode math;
    };
    std::vector<Run> runs;
    TrainTally tally;
    for (const auto& backend : test::availableSelectedBackends(tally.notRun)) {
        for (MathMode math : modes)
            for (const AlgorithmInfo& a : backend->algorithms()) {
                if (!test::algorithmSelected(backend->name(), a.name))
                    continue;
                // The reference itself: its step against its own would only repeat it.
                if (backend->name() == "cpu" && a.name == "direct")
                    continue;
                if (const std::string why = whyNotTrained(*backend, a.name, math); !why.empty())
                    tally.notRun.push_back(backend->name() + "." + a.name + " " + mathModeName(math) + ": " + why);
                else
                    runs.push_back({ backend.get(), a.name, math });
            }
    }
    for (const std::string& why : tally.notRun)
        std::cout << "not run here: " << why << "\n";
    if (runs.empty()) {
        std::string reasons;
        for (const std::string& why : tally.notRun)
            reasons += (reasons.empty() ? "" : "; ") + why;
        std::cout << "SKIPPED: no selected backend but cpu.direct trains here ("
                  << (reasons.empty() ? "none selected" : reasons) << ")" << std::endl;
        return;
    }

    const uint64_t seed = test::caseSeed();
    std::cout << "cross-backend training: random cases from seed " << seed << " (replay with --rng-seed " << seed << ")"
              << std::endl;
    const std::vector<test::NetworkCase> drawn = test::allCases(seed);
    std::vector<StepCase> cases;
    int skipped = 0;
    for (const test::NetworkCase& d : drawn) {
        StepCase c;
        INFO(d.name << " on cpu.direct, seed " << seed << "; the network: " << serializeNetwork(d.net));
        if (const std::string why = referenceStep(d, seed, c); !why.empty()) {
            ++skipped;
            std::cout << "cpu.direct does not train it, skipped: " << d.name << ": " << why << "\n";
            continue;
        }
        cases.push_back(std::move(c));
    }
    for (const Run& run : runs)
        stepEveryCase(*run.backend, run.algorithm, run.math, cases, seed, tally);
    std::cout << "cross-backend training: " << drawn.size() << " cases, " << tally.checked << " gradients checked, "
              << tally.refused << " refused, " << skipped << " skipped (cpu.direct does not train them)";
    if (tally.beyond)
        std::cout << ", " << tally.beyond << " beyond a math mode's bound";
    std::cout << std::endl;
    CHECK(tally.checked > 0);
}

} // namespace

TEST_CASE("cross-backend training: one step of every case on every backend that trains it, against cpu.direct",
    "[cross_backend][train]")
{
    trainRegistry({ MathMode::FP32 });
}

TEST_CASE("cross-backend training: one step in every math mode a backend trains in (tf32, fp16, bf16) against FP32 "
          "cpu.direct",
    "[cross_backend][train][math]")
{
    trainRegistry({ MathMode::TF32, MathMode::FP16, MathMode::BF16 });
}
