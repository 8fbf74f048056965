// The general Einsum cases of the importer (tests/compute/einsum_cases.h: diagonals as a reshape and a gather, three
// and four operands as chained matmuls, constants held by the matmul or contracted at import) on the backends other
// than cpu.direct (onnx_einsum_general_test.cpp): oneDNN where it is built, our CUDA kernels and cuDNN on a GPU
// (SKIPPED without one); each output against numpy.einsum's definition, relative L2 ≤ 1e-5 (FP32 math).
#include "compute/backend_registry.h"
#include "compute/profiler.h"
#include "tests/compute/einsum_cases.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

#include <iostream>

using namespace convscope;
using namespace convscope::test;

namespace {

void runEinsumCases(const std::vector<Selection>& selections)
{
    for (const Selection& s : selections) {
        const auto backend = BackendRegistry::instance().find(s.backend);
        if (!backend || !backend->availability().available) {
            std::cout << "SKIPPED: " << s.backend << " is not built or has no device" << std::endl;
            return;
        }
    }
    for (const EinsumCase& c : generalEinsumCases()) {
        INFO(c.equation << " " << c.kinds);
        std::vector<EinsumOperand> ops;
        const Network net = buildEinsum(c, ops);
        const ProfileOptions po = test::onePassOptions(selections);
        const RunResult run = profile(net, einsumInput(c), po);
        const std::vector<double> want = referenceEinsum(ops, c.out);
        for (const SelectionResult& sr : run.selections) {
            INFO(sr.selection.str() << ": " << sr.failure);
            REQUIRE(sr.ok);
            const Tensor& y = *sr.layers.back().output;
            REQUIRE(size_t(y.numel()) == want.size());
            CHECK(einsumRelL2(y, want) < 1e-5);
        }
    }
}

} // namespace

// Apart from the GPU case so that the asan preset can leave it out, as it leaves out the oneDNN LayerNormalization
// node tests (CMakePresets.json: LeakSanitizer's tracer crashes at exit scanning the dlopen'd oneDNN module).
TEST_CASE("ONNX Einsum's diagonals and chains of operands run as numpy.einsum on oneDNN", "[onnx][einsum][onednn]")
{
    runEinsumCases({ Selection::parse("onednn.auto") });
}

TEST_CASE("ONNX Einsum's diagonals and chains of operands run as numpy.einsum on the GPUs", "[onnx][einsum][gpu]")
{
    runEinsumCases(
        { Selection::parse("cuda.direct"), Selection::parse("cuda.implicit_gemm"), Selection::parse("cudnn.auto") });
}
