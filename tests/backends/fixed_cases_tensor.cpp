// The cross-backend test's fixed cases of matmul and gather, and of linear on the last axis of ranks other than 2
// (issue 30): torch.matmul's broadcasting (a whole batch, one operand broadcast, both broadcast on different axes:
// cuBLAS's strided batch and the fallback kernel), the 1-D operand rules and ranks 3 to 6; gather along several axes
// with negative, repeated, scalar and 2-D indices.
#include "tests/backends/backend_cases.h"

using namespace convscope;

namespace {

using Case = test::NetworkCase;

struct Builder : test::NetworkBuilder {
    explicit Builder(const std::string& name, int64_t n, int64_t c, int64_t h, int64_t w)
        : NetworkBuilder(name, n, c, h, w, false, 13, 17)
    {
    }
};

// A constant operand of `dims` with values in ±1.5, on the left or the right.
Matmul constantOperand(const std::vector<int64_t>& dims, bool first)
{
    Matmul m;
    int64_t count = 1;
    for (const int64_t d : dims)
        count *= d;
    for (int64_t i = 0; i < count; ++i)
        m.constant.push_back(float((i * 7) % 13) / 4.0f - 1.5f);
    m.constant_shape = dims;
    m.constant_first = first;
    return m;
}

std::vector<Case> matmulCases(const std::string& type)
{
    const Matmul k;
    return {
        Builder(type, 1, 1, 1, 1)
            .dims({ 2, 3, 4 })
            .add("mm", constantOperand({ 2, 4, 3 }, false))
            .done("by a batched constant on the right: [2, 3, 4] · [2, 4, 3] (ONNX's matmul_3d)"),
        Builder(type, 1, 1, 1, 1)
            .dims({ 2, 3, 4 })
            .add("mm", constantOperand({ 5, 3 }, true))
            .done("by a constant on the left: [5, 3] · [2, 3, 4]"),
        Builder(type, 1, 1, 1, 1)
            .dims({ 2, 3, 5, 4 })
            .add("kt", Transpose { { 0, 1, 3, 2 } })
            .add("qk", k, { "input", "kt" })
            .add("sm", Softmax {})
            .done("attention's Q · Kᵀ [2, 3, 5, 4] · [2, 3, 4, 5], then softmax"),
        Builder(type, 1, 1, 1, 1)
            .dims({ 2, 3, 5, 4 })
            .add("one", Slice { 0, 1, 2 })
            .add("t", Transpose { { 0, 1, 3, 2 } })
            .add("mm", k, { "input", "t" })
            .done("b's batch broadcast: [2, 3, 5, 4] · [1, 3, 4, 5]"),
        Builder(type, 1, 1, 1, 1)
            .dims({ 2, 4, 4 })
            .add("one", Slice { 0, 0, 1 })
            .add("m", Reshape { { 4, 4 } })
            .add("xm", k, { "input", "m" })
            .add("mx", k, { "m", "xm" })
            .done("a 2-D operand broadcast on either side of a rank-3 one"),
        Builder(type, 1, 1, 1, 1)
            .dims({ 2, 3, 5 })
            .add("row", Slice { 0, 1, 2 })
            .add("v5", Slice { 1, 2, 3 }, { "row" })
            .add("v", Reshape { { 5 } }, { "v5" })
            .add("xv", k, { "input", "v" })
            .done("a 1-D second operand: [2, 3, 5] · [5] = [2, 3]"),
        Builder(type, 1, 1, 1, 1)
            .dims({ 2, 3, 5 })
            .add("row", Slice { 0, 0, 1 })
            .add("v3", Slice { 2, 4, 5 }, { "row" })
            .add("v", Reshape { { 3 } }, { "v3" })
            .add("vx", k, { "v", "input" })
            .done("a 1-D first operand: [3] · [2, 3, 5] = [2, 5]"),
        Builder(type, 1, 1, 1, 1)
            .dims({ 2, 1, 3, 4, 5 })
            .add("t", Transpose { { 1, 0, 2, 4, 3 } })
            .add("mm", k, { "input", "t" })
            .done("both broadcast: [2, 1, 3, 4, 5] · [1, 2, 3, 5, 4] = [2, 2, 3, 4, 4]"),
        Builder(type, 1, 1, 1, 1)
            .dims({ 1, 2, 1, 2, 3, 4 })
            .add("t", Transpose { { 0, 1, 2, 3, 5, 4 } })
            .add("mm", k, { "input", "t" })
            .done("rank 6"),
        Builder(type, 1, 1, 1, 1)
            .dims({ 37, 33 })
            .add("t", Transpose { { 1, 0 } })
            .add("mm", k, { "input", "t" })
            .done("one matrix past a 32 × 32 tile: [37, 33] · [33, 37]"),
        Builder(type, 2, 6, 4, 5)
            .spread("s", 6)
            .add("v", Transpose { { 0, 1, 3, 2 } })
            .add("mm", k, { "s", "v" })
            .done("after a convolution, on an image's H × W"),
    };
}

std::vector<Case> gatherCases(const std::string& type)
{
    return {
        Builder(type, 3, 4, 5, 6).add("g", Gather { 1, { 2, 0, -1, 2 }, { 4 } }).done("channels 2, 0, −1, 2"),
        Builder(type, 2, 3, 5, 4).add("g", Gather { -1, { 1 }, {} }).done("a scalar index removes W (x[..., 1])"),
        Builder(type, 1, 1, 1, 1)
            .dims({ 5, 4, 3 })
            .add("g", Gather { 0, { 0, 1, 1, 2, -5, 4 }, { 2, 3 } })
            .done("2-D indices along axis 0: [2, 3, 4, 3]"),
        Builder(type, 1, 1, 1, 1).dims({ 2, 3, 4, 5, 6 }).add("g", Gather { 3, { -2, 0 }, { 2 } }).done("rank 5"),
        Builder(type, 1, 1, 1, 1).dims({ 7, 9 }).add("g", Gather { 1, { 8, 0, 8 }, { 3 } }).done("rank 2, repeats"),
        Builder(type, 1, 1, 1, 1).dims({ 2, 4, 3 }).add("g", Gather { 1, { 0 }, {} }).done("ViT's class token"),
        Builder(type, 2, 4, 3, 5)
            .spread("s", 4)
            .add("g", Gather { 2, { 2, 1 }, { 2 } })
            .add("r", ReLU {})
            .done("after a convolution, read by a relu"),
    };
}

std::vector<Case> linearCases(const std::string& type)
{
    return {
        Builder(type, 1, 1, 1, 1).dims({ 2, 5, 7 }).add("fc", Linear { 4, true }).done("the last axis of rank 3"),
        Builder(type, 1, 1, 1, 1).dims({ 2, 3, 4, 5 }).add("fc", Linear { 6, true }).done("the last axis of rank 4"),
        Builder(type, 1, 1, 1, 1).dims({ 2, 2, 3, 2, 6 }).add("fc", Linear { 3, false }).done("rank 5, no bias"),
        Builder(type, 1, 1, 1, 1).dims({ 9 }).add("fc", Linear { 4, true }).done("rank 1"),
        Builder(type, 2, 5, 4, 3)
            .add("g", GlobalAvgPool2d {})
            .add("fc", Linear { 3, true })
            .done("[N, C, 1, 1] after global pooling: read as [N, C]"),
    };
}

} // namespace

namespace convscope::test {

std::vector<NetworkCase> fixedTensorCasesFor(const LayerSpec& kind)
{
    const std::string type = layerTypeName(kind);
    if (std::holds_alternative<Matmul>(kind))
        return matmulCases(type);
    if (std::holds_alternative<Gather>(kind))
        return gatherCases(type);
    if (std::holds_alternative<Linear>(kind))
        return linearCases(type);
    return {};
}

} // namespace convscope::test
