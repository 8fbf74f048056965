// Graph mode (option graph=1): the layers are captured into a CUDA Graph at prepare and replayed per pass. The
// outputs must equal the eager session's bit for bit (same kernels, same order), every layer must still get a
// time, and the layout switch that graph mode cannot time is refused with a reason.
#include "compute/materialize.h"
#include "compute/network_json.h"
#include "compute/profiler.h"
#include "tests/kernels/gpu_test_support.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

#include <cstring>

using namespace convscope;

namespace {

void checkGraphMode(const std::string& backendName, const std::string& algorithm)
{
    auto backend = test::backendOrSkip(backendName);
    if (!backend)
        return;
    for (const std::string example : { "lenet5", "fusable" }) {
        Network net = example == "lenet5" ? loadNetwork(test::examplesDir() / "lenet5.json")
                                          : test::fusableNetwork(ReLU {}, 2, 19, 21);
        const ShapeReport shapes = inferShapes(net);
        REQUIRE(shapes.ok());
        materializeParameters(net, shapes);
        const Tensor input = test::randomTensor(shapes.input, 5);
        std::vector<std::vector<Tensor>> outputs;
        for (bool graph : { false, true }) {
            ProfileOptions opt;
            opt.selections = { { backendName, algorithm } };
            opt.warmup = 1;
            opt.repeat = 3;
            opt.keepOutputs = true;
            if (graph)
                opt.session.extra["graph"] = "1";
            const RunResult r = profile(net, input, opt);
            const auto& sel = r.selections[0];
            INFO(backendName << "." << algorithm << " graph " << graph << " " << example << ": " << sel.failure);
            REQUIRE(sel.ok);
            CHECK(sel.metadata.at("launch").find(graph ? "CUDA Graph" : "eager") != std::string::npos);
            CHECK(sel.metadata.count("graph_pass_us") == (graph ? 1u : 0u));
            if (graph)
                CHECK(std::stod(sel.metadata.at("graph_layer_us")) > 0);
            std::vector<Tensor> outs;
            for (const auto& l : sel.layers) {
                CHECK(l.samplesMs.size() == 3);
                CHECK(l.computeMs.median >= 0);
                CHECK(l.error.valid);
                CHECK(l.error.relL2 < 5e-3);
                if (graph)
                    CHECK(l.note.find("CUDA Graph") != std::string::npos);
                Tensor t(l.output->shape());
                std::memcpy(t.data(), l.output->data(), size_t(t.numel()) * sizeof(float));
                outs.push_back(std::move(t));
            }
            outputs.push_back(std::move(outs));
        }
        for (size_t i = 0; i < outputs[0].size(); ++i) {
            INFO("layer " << i);
            CHECK(std::memcmp(outputs[0][i].data(), outputs[1][i].data(), size_t(outputs[0][i].numel()) * 4) == 0);
        }
    }
}

} // namespace

TEST_CASE("cuda graph mode replays the same kernels with per-layer times", "[gpu][cuda][graph]")
{
    checkGraphMode("cuda", "implicit_gemm");
    checkGraphMode("cuda", "tiled");
}

TEST_CASE("cudnn graph mode replays the same calls with per-layer times", "[gpu][cudnn][graph]")
{
    checkGraphMode("cudnn", "implicit_precomp_gemm");
    auto backend = test::backendOrSkip("cudnn");
    if (!backend)
        return;
    SessionOptions o;
    o.extra = { { "graph", "1" }, { "layout", "nhwc" } };
    CHECK_THROWS_AS(backend->createSession("auto", o), UnsupportedError);
}
