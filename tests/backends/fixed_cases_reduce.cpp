// The cross-backend cases of softmax, log_softmax and reduce (issue 30): every axis at ranks 1 to 6, the innermost
// axis (a warp or a block per row on the GPU) and the others (a thread per column), rows longer than 1024, every
// reduce op over one axis, several, all of them (the 0-d result held as [1]) and with keepdim, and seeded random
// shapes and axes.
#include "tests/backends/backend_cases.h"

#include "compute/layer_kinds.h"
#include "compute/reduce.h"

#include <random>

using namespace convscope;

namespace {

using Case = test::NetworkCase;

struct Builder : test::NetworkBuilder {
    explicit Builder(const std::string& name, int64_t n, int64_t c, int64_t h, int64_t w, bool flat = false)
        : NetworkBuilder(name, n, c, h, w, flat, 7, 11)
    {
    }
};

LayerSpec softmaxOf(const LayerSpec& kind, int64_t dim)
{
    if (std::holds_alternative<LogSoftmax>(kind))
        return LogSoftmax { dim };
    return Softmax { dim };
}

std::string listText(const std::vector<int64_t>& v)
{
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i)
        s += (i ? ", " : "") + std::to_string(v[i]);
    return s + "]";
}

std::vector<Case> softmaxCases(const std::string& type, const LayerSpec& kind)
{
    const auto at = [&](const std::vector<int64_t>& dims, int64_t dim, const std::string& what) {
        return Builder(type, 1, 1, 1, 1).dims(dims).add("sm", softmaxOf(kind, dim)).done(what);
    };
    return { Builder(type, 2, 3, 4, 5).spread("s", 6).add("sm", softmaxOf(kind, 1)).done("over the channels"),
        Builder(type, 3, 11, 1, 1, true).add("sm", softmaxOf(kind, 1)).done("flat [3, 11]"),
        Builder(type, 2, 3, 4, 5).spread("s", 4).add("sm", softmaxOf(kind, -1)).done("image, the last axis"),
        Builder(type, 2, 3, 4, 5).spread("s", 4).add("sm", softmaxOf(kind, 2)).done("image, the rows"),
        Builder(type, 2, 3, 4, 5).spread("s", 4).add("sm", softmaxOf(kind, 0)).done("image, the batch"),
        at({ 7 }, 0, "rank 1"), at({ 3, 4, 5 }, 0, "rank 3, dim 0"), at({ 3, 4, 5 }, -1, "rank 3, dim −1"),
        at({ 2, 1500 }, 1, "rows of 1500 (a block per row)"), at({ 3, 2, 1100 }, 1, "a long strided axis"),
        at({ 300, 7 }, 0, "7 columns of 300 (warps share a column)"),
        at({ 2, 100, 40 }, 1, "80 columns of 100, two groups of 32 and a part"),
        at({ 2, 3, 2, 3, 4 }, 2, "rank 5, dim 2"), at({ 2, 3, 2, 2, 3, 2 }, -2, "rank 6, dim −2"),
        at({ 2, 3, 2, 2, 3, 2 }, 3, "rank 6, dim 3") };
}

std::vector<Case> reduceCases(const std::string& type)
{
    std::vector<Case> cases;
    for (Reduce::Op op : { Reduce::Op::Mean, Reduce::Op::Sum, Reduce::Op::Max, Reduce::Op::Min, Reduce::Op::L2 }) {
        const auto at = [&](Builder b, std::vector<int64_t> dim, bool keepdim, const std::string& what) {
            const std::string name
                = std::string(reduceOpName(op)) + " " + listText(dim) + (keepdim ? " keepdim, " : ", ") + what;
            cases.push_back(b.add("r", Reduce { op, std::move(dim), keepdim }).done(name));
        };
        const auto general = [&](const std::vector<int64_t>& dims) {
            Builder b(type, 1, 1, 1, 1);
            b.dims(dims);
            return b;
        };
        Builder image(type, 2, 3, 5, 6);
        image.spread("s", 4);
        at(image, { 2, 3 }, true, "H and W of an image");
        at(image, { 1 }, false, "the channels");
        at(image, {}, false, "every axis");
        at(general({ 3, 4, 5 }), { 0, -1 }, true, "rank 3");
        at(general({ 2, 3, 2, 2, 3, 2 }), { 1, 3, 5 }, false, "rank 6");
        at(general({ 9 }), { 0 }, true, "rank 1");
        at(general({ 2, 3, 20, 20 }), { -2, -1 }, false, "400 per output (a block per output)");
        at(general({ 300, 2, 3 }), { 0 }, false, "an outer axis of 300");
        // Few outputs of many inputs: the GPU's split reduction (slices in parallel, then their parts in order).
        // A sum of 180000 values in [0, 1) passes FP16's largest finite value (65504): 100000 of them for sum.
        if (op == Reduce::Op::Sum)
            at(general({ 2, 200, 250 }), {}, false, "every axis of 100000 (a split reduction)");
        else
            at(general({ 2, 300, 300 }), {}, false, "every axis of 180000 (a split reduction)");
        at(general({ 3, 256, 300 }), { 1, 2 }, true, "3 outputs of 76800 (a split reduction)");
    }
    return cases;
}

} // namespace

namespace convscope::test {

std::vector<NetworkCase> fixedReduceCasesFor(const LayerSpec& kind)
{
    const std::string type = layerTypeName(kind);
    if (std::holds_alternative<Softmax>(kind) || std::holds_alternative<LogSoftmax>(kind))
        return softmaxCases(type, kind);
    if (std::holds_alternative<Reduce>(kind))
        return reduceCases(type);
    return {};
}

std::vector<NetworkCase> randomReduceCasesFor(const LayerSpec& kind, uint64_t seed)
{
    // Empty for another kind, as the header says: random_cases.cpp asks this first, so softmax networks under another
    // kind's name had taken the place of 31 kinds' own random cases (found by the cross-backend training test).
    if (!std::holds_alternative<Reduce>(kind) && !std::holds_alternative<Softmax>(kind)
        && !std::holds_alternative<LogSoftmax>(kind))
        return {};
    const std::string type = layerTypeName(kind);
    std::mt19937_64 gen(seed ^ 0x5EDC0DEULL ^ (std::holds_alternative<Reduce>(kind) ? 1 : 0));
    const auto r = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(gen); };
    std::vector<NetworkCase> cases;
    for (int i = 0; i < 10; ++i) {
        std::vector<int64_t> dims;
        const int rank = int(r(1, 6));
        for (int k = 0; k < rank; ++k)
            dims.push_back(r(1, rank > 4 ? 4 : 9));
        Builder b(type, 1, 1, 1, 1);
        b.dims(dims);
        std::string what = "random " + listText(dims);
        if (std::holds_alternative<Reduce>(kind)) {
            Reduce red { Reduce::Op(r(0, 4)), {}, r(0, 1) == 1 };
            for (int64_t a = 0; a < rank; ++a)
                if (r(0, 2) == 0)
                    red.dim.push_back(r(0, 1) ? a : a - rank);
            what
                += std::string(", ") + reduceOpName(red.op) + " " + listText(red.dim) + (red.keepdim ? " keepdim" : "");
            b.add("r", red);
        } else {
            const int64_t dim = r(-rank, rank - 1);
            what += ", dim " + std::to_string(dim);
            b.add("sm", softmaxOf(kind, dim));
        }
        b.net.input.source = "random:" + std::to_string((seed + uint64_t(i)) & 0x7fffffff);
        cases.push_back(b.done(what));
    }
    return cases;
}

} // namespace convscope::test
