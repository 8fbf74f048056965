// The profiler's per-selection error isolation, on the CPU: a fake backend whose algorithms fail in every way
// a GPU backend can (out of memory while preparing, an unsupported configuration, a throw in the middle of the
// timed passes, a foreign exception type, a failed fetch, a wrong pass result) must have each failure recorded
// for its own selection, with its message, while every other selection finishes with correct results.
// (tests/kernels/fault_injection_test.cpp drives the same paths through the real GPU modules.)
#include "compute/backend_registry.h"
#include "compute/error.h"
#include "compute/profiler.h"

#include "tests/test_support.h"

#include <catch2/catch.hpp>

#include <new>

using namespace convscope;

namespace {

// Wraps a cpu.direct session and fails on purpose according to its algorithm's name.
class FaultySession : public BackendSession {
public:
    explicit FaultySession(std::string algorithm)
        : m_algorithm(std::move(algorithm))
        , m_inner(BackendRegistry::instance().find("cpu")->createSession("direct", SessionOptions {}))
    {
    }
    void prepare(const Network& net, const ShapeReport& shapes) override
    {
        if (m_algorithm == "oom_prepare")
            throw OutOfMemoryError("fake.oom_prepare: out of device memory: asked 512 MiB, 301 MiB free");
        if (m_algorithm == "unsupported_prepare")
            throw UnsupportedError("fake.unsupported_prepare: this configuration is unsupported");
        m_inner->prepare(net, shapes);
    }
    PassTiming runPass(const Tensor& input) override
    {
        ++m_passes;
        if (m_algorithm == "throw_run" && m_passes == 3)
            throw Error("fake.throw_run: an illegal memory access was encountered");
        if (m_algorithm == "bad_alloc")
            throw std::bad_alloc();
        PassTiming t = m_inner->runPass(input);
        if (m_algorithm == "short_timing")
            t.layerMs.pop_back();
        return t;
    }
    Tensor fetchOutput(size_t layer, double* ms) override
    {
        if (m_algorithm == "fetch_fail" && layer == 1)
            throw Error("fake.fetch_fail: copy back failed");
        return m_inner->fetchOutput(layer, ms);
    }

private:
    std::string m_algorithm;
    std::unique_ptr<BackendSession> m_inner;
    int m_passes = 0;
};

class FaultyBackend : public Backend {
public:
    std::string name() const override { return "faulty"; }
    std::string description() const override { return "fails on purpose (tests)"; }
    std::vector<AlgorithmInfo> algorithms() const override
    {
        std::vector<AlgorithmInfo> a;
        for (const char* n : { "ok", "oom_prepare", "unsupported_prepare", "unsupported_layer", "throw_run",
                 "bad_alloc", "fetch_fail", "short_timing", "create_fails" })
            a.push_back({ n, n });
        return a;
    }
    Availability availability() const override { return { true, {} }; }
    Support supports(const std::string& algorithm, const LayerSpec& spec, const LayerShape&) const override
    {
        if (algorithm == "unsupported_layer" && std::holds_alternative<MaxPool2d>(spec))
            return { false, "max pooling is unsupported here" };
        return {};
    }
    std::unique_ptr<BackendSession> createSession(const std::string& algorithm, const SessionOptions&) override
    {
        if (algorithm == "create_fails")
            throw Error("faulty.create_fails: no device context");
        return std::make_unique<FaultySession>(algorithm);
    }
};

Network isolationNet()
{
    Network net;
    net.name = "isolation";
    net.input = { 1, 2, 9, 9, false, "random:1" };
    Conv2d c;
    c.out_channels = 3;
    c.kernel_size = { 3, 3 };
    net.layers.push_back({ "conv", c, {}, {}, {}, {}, {}, {}, {} });
    net.layers.push_back({ "relu", ReLU {}, {}, {}, {}, {}, {}, {}, {}, {} });
    net.layers.push_back({ "pool", MaxPool2d {}, {}, {}, {}, {}, {}, {}, {}, {} });
    return net;
}

} // namespace

TEST_CASE("every way a selection can fail is recorded for that selection while the others finish", "[profiler][faults]")
{
    BackendRegistry::instance().add(std::make_shared<FaultyBackend>());
    Network net = isolationNet();
    ProfileOptions opt;
    opt.selections = { { "cpu", "direct" }, { "faulty", "oom_prepare" }, { "faulty", "ok" },
        { "faulty", "unsupported_prepare" }, { "faulty", "unsupported_layer" }, { "faulty", "throw_run" },
        { "faulty", "bad_alloc" }, { "faulty", "fetch_fail" }, { "faulty", "short_timing" },
        { "faulty", "create_fails" }, { "cpu", "im2col_gemm" } };
    opt.warmup = 1;
    opt.repeat = 3;
    opt.keepOutputs = true;
    const RunResult r = profile(net, test::randomTensor(net.input.shape(), 7), opt);
    REQUIRE(r.selections.size() == opt.selections.size());

    const auto check = [&](const char* algorithm, bool ok, const char* message, bool unsupported) {
        const SelectionResult* s = r.find({ "faulty", algorithm });
        REQUIRE(s);
        INFO(algorithm << ": " << s->failure);
        CHECK(s->ok == ok);
        if (message)
            CHECK_THAT(s->failure, Catch::Contains(message));
        CHECK(s->unsupported == unsupported);
    };
    check("ok", true, nullptr, false);
    check("oom_prepare", false, "out of device memory", false);
    check("unsupported_prepare", false, "unsupported", true);
    check("unsupported_layer", false, "layer 2 (pool)", true);
    check("throw_run", false, "illegal memory access", false);
    check("bad_alloc", false, "bad_alloc", false);
    check("fetch_fail", false, "copy back failed", false);
    check("short_timing", false, "timed 2 layers of 3", false);
    check("create_fails", false, "no device context", false);

    // The healthy selections ran every pass and match the reference.
    for (const Selection& sel :
        { Selection { "cpu", "direct" }, Selection { "cpu", "im2col_gemm" }, Selection { "faulty", "ok" } }) {
        const SelectionResult* s = r.find(sel);
        REQUIRE(s);
        INFO(sel.str() << ": " << s->failure);
        REQUIRE(s->ok);
        REQUIRE(s->layers.size() == 3);
        for (const auto& l : s->layers) {
            CHECK(l.samplesMs.size() == 3);
            REQUIRE(l.error.valid);
            CHECK(l.error.relL2 <= 1e-5);
            CHECK(l.output.has_value());
        }
    }
    // A failed selection keeps no half-made results that a report could mistake for a measurement.
    CHECK(r.find({ "faulty", "throw_run" })->layers.empty());
    CHECK(r.find({ "faulty", "fetch_fail" })->layers.empty());
}
