// The third part of constant folding: the maths that exports write on constant tables (issue 30; Swin V2's
// continuous position bias, an MLP run on a constant coordinate table: MatMul, Add, Relu, MatMul, Sigmoid, Mul, and
// the clamped, exponentiated logit scale: Clip, Exp). MatMul is numpy.matmul (1-D operands promoted and the added
// axis removed, batch axes broadcast), Gemm is ONNX's alpha · A' · B' + beta · C (C broadcast to [M, N]); Relu,
// Sigmoid, Tanh and Clip element-wise; Flatten a view. Floats are computed in double and rounded once to float (what
// ConstTensor holds): within half an ulp of ONNX's float result, whatever order the reference sums in; integers
// (MatMul, Clip, Relu of int32/int64) stay exact, an overflow failing. Sizes come from the file: counts and work are
// capped.
#include "compute/onnx/onnx_fold.h"

#include "compute/checked_math.h"
#include "compute/error.h"
#include "compute/memory_budget.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace convscope::onnx {

namespace {

    constexpr int64_t kMaxElements = int64_t(1) << 26;
    constexpr int64_t kMaxProducts = int64_t(1) << 32; // multiply-adds of one folded MatMul or Gemm

    const ConstTensor& need(const std::vector<const ConstTensor*>& in, size_t k, const Attributes& a)
    {
        if (k >= in.size() || !in[k])
            a.fail("input " + std::to_string(k) + " is missing");
        return *in[k];
    }

    int64_t capped(const std::vector<int64_t>& dims, const Attributes& a)
    {
        const int64_t n = elementCount(dims, a.where());
        if (n > kMaxElements)
            a.fail("a constant of " + npyDimsText(dims) + " is too large to fold (over " + std::to_string(kMaxElements)
                + " elements)");
        checkHostAllocation(n * 16, a.where() + ": a constant of " + npyDimsText(dims));
        return n;
    }

    // Sums of products, exact for integers (an overflow fails) and in double for floats.
    struct Accumulator {
        bool isFloat;
        double d = 0;
        int64_t i = 0;
        void add(const ConstTensor& x, size_t p, const ConstTensor& y, size_t q, const Attributes& a)
        {
            if (isFloat) {
                d += x.at(p) * y.at(q);
                return;
            }
            int64_t prod = 0;
            if (__builtin_mul_overflow(x.i[p], y.i[q], &prod) || __builtin_add_overflow(i, prod, &i))
                a.fail("an integer MatMul whose sum overflows 64 bits");
        }
    };

    ConstTensor matmul(const ConstTensor& x, const ConstTensor& y, const Attributes& a)
    {
        if (x.dims.empty() || y.dims.empty())
            a.fail("MatMul of a scalar (numpy.matmul takes operands of 1 or more dims)");
        std::vector<int64_t> dx = x.dims, dy = y.dims;
        const bool xVector = dx.size() == 1, yVector = dy.size() == 1;
        if (xVector)
            dx.insert(dx.begin(), 1);
        if (yVector)
            dy.push_back(1);
        const int64_t m = dx[dx.size() - 2], k = dx.back(), n = dy.back();
        if (dy[dy.size() - 2] != k)
            a.fail("MatMul of " + npyDimsText(x.dims) + " by " + npyDimsText(y.dims) + ": the inner sizes "
                + std::to_string(k) + " and " + std::to_string(dy[dy.size() - 2]) + " differ");
        // The batch axes, broadcast.
        const size_t rank = std::max(dx.size(), dy.size()) - 2;
        std::vector<int64_t> bx(rank, 1), by(rank, 1), batch(rank, 1);
        std::copy(dx.begin(), dx.end() - 2, bx.begin() + long(rank - (dx.size() - 2)));
        std::copy(dy.begin(), dy.end() - 2, by.begin() + long(rank - (dy.size() - 2)));
        for (size_t j = 0; j < rank; ++j) {
            if (bx[j] != by[j] && bx[j] != 1 && by[j] != 1)
                a.fail("MatMul of " + npyDimsText(x.dims) + " by " + npyDimsText(y.dims) + ": the batch axes do not "
                    + "broadcast");
            batch[j] = bx[j] == 1 ? by[j] : bx[j];
        }
        std::vector<int64_t> outDims = batch;
        if (!xVector)
            outDims.push_back(m);
        if (!yVector)
            outDims.push_back(n);
        const int64_t count = capped(outDims, a);
        if (k > 0 && count > kMaxProducts / k)
            a.fail("a MatMul of " + npyDimsText(x.dims) + " by " + npyDimsText(y.dims) + " is too large to fold");
        ConstTensor out;
        out.dims = outDims;
        out.isFloat = x.isFloat || y.isFloat;
        if (x.isFloat != y.isFloat)
            a.fail("MatMul of a float and an integer constant");
        const int64_t batches = elementCount(batch, a.where());
        std::vector<int64_t> pos(rank, 0);
        for (int64_t b = 0; b < batches; ++b) {
            int64_t ox = 0, oy = 0, sx = 1, sy = 1; // the operands' batch offsets (in matrices)
            for (size_t j = rank; j-- > 0;) {
                ox += (bx[j] == 1 ? 0 : pos[j]) * sx;
                oy += (by[j] == 1 ? 0 : pos[j]) * sy;
                sx *= bx[j];
                sy *= by[j];
            }
            for (int64_t r = 0; r < m; ++r)
                for (int64_t c = 0; c < n; ++c) {
                    Accumulator acc { out.isFloat };
                    for (int64_t t = 0; t < k; ++t)
                        acc.add(x, size_t(ox * m * k + r * k + t), y, size_t(oy * k * n + t * n + c), a);
                    if (out.isFloat)
                        out.f.push_back(float(acc.d));
                    else
                        out.i.push_back(acc.i);
                }
            for (size_t j = rank; j-- > 0;) {
                if (++pos[j] < batch[j])
                    break;
                pos[j] = 0;
            }
        }
        return out;
    }

    ConstTensor gemm(const std::vector<const ConstTensor*>& in, const Attributes& a)
    {
        const ConstTensor &x = need(in, 0, a), &y = need(in, 1, a);
        if (x.dims.size() != 2 || y.dims.size() != 2)
            a.fail("Gemm of " + npyDimsText(x.dims) + " and " + npyDimsText(y.dims) + " (both must be 2-D)");
        const bool ta = a.getInt("transA", 0) != 0, tb = a.getInt("transB", 0) != 0;
        const double alpha = a.getFloat("alpha", 1.0f), beta = a.getFloat("beta", 1.0f);
        const int64_t m = ta ? x.dims[1] : x.dims[0], k = ta ? x.dims[0] : x.dims[1];
        const int64_t kb = tb ? y.dims[1] : y.dims[0], n = tb ? y.dims[0] : y.dims[1];
        if (k != kb)
            a.fail("Gemm of " + npyDimsText(x.dims) + " and " + npyDimsText(y.dims) + ": the inner sizes "
                + std::to_string(k) + " and " + std::to_string(kb) + " differ");
        const int64_t count = capped({ m, n }, a);
        if (k > 0 && count > kMaxProducts / k)
            a.fail("a Gemm of " + npyDimsText(x.dims) + " and " + npyDimsText(y.dims) + " is too large to fold");
        const ConstTensor* c = in.size() > 2 ? in[2] : nullptr;
        std::vector<int64_t> dc;
        if (c) { // unidirectional broadcast of C to [M, N]
            dc = c->dims;
            if (dc.size() > 2)
                a.fail("Gemm's C " + npyDimsText(dc) + " has more than 2 dims");
            dc.insert(dc.begin(), 2 - dc.size(), 1);
            if ((dc[0] != 1 && dc[0] != m) || (dc[1] != 1 && dc[1] != n))
                a.fail("Gemm's C " + npyDimsText(c->dims) + " does not broadcast to [" + std::to_string(m) + ", "
                    + std::to_string(n) + "]");
        }
        ConstTensor out;
        out.dims = { m, n };
        for (int64_t r = 0; r < m; ++r)
            for (int64_t col = 0; col < n; ++col) {
                double s = 0;
                for (int64_t t = 0; t < k; ++t)
                    s += x.at(size_t(ta ? t * m + r : r * k + t)) * y.at(size_t(tb ? col * k + t : t * n + col));
                double v = alpha * s;
                if (c)
                    v += beta * c->at(size_t((dc[0] == 1 ? 0 : r) * dc[1] + (dc[1] == 1 ? 0 : col)));
                out.f.push_back(float(v));
            }
        return out;
    }

    ConstTensor elementwise(
        const std::string& op, const std::vector<const ConstTensor*>& in, const Attributes& a, int64_t opset)
    {
        ConstTensor x = need(in, 0, a);
        double lo = -std::numeric_limits<double>::infinity(), hi = std::numeric_limits<double>::infinity();
        if (op == "Clip") {
            if (opset < 11) {
                lo = a.getFloat("min", -std::numeric_limits<float>::max());
                hi = a.getFloat("max", std::numeric_limits<float>::max());
            } else {
                for (size_t k : { size_t(1), size_t(2) })
                    if (k < in.size() && in[k]) {
                        if (in[k]->numel() != 1)
                            a.fail("Clip's " + std::string(k == 1 ? "min" : "max") + " is not a scalar");
                        (k == 1 ? lo : hi) = in[k]->at(0);
                    }
            }
        }
        if (!x.isFloat) {
            if (op == "Sigmoid" || op == "Tanh")
                a.fail(op + " of integers (ONNX takes floats)");
            for (int64_t& v : x.i) // Relu and Clip of integers: exact
                v = op == "Relu" ? std::max<int64_t>(v, 0)
                                 : std::min(std::max(v, int64_t(std::max(lo, -9.2e18))), int64_t(std::min(hi, 9.2e18)));
            return x;
        }
        for (float& v : x.f) {
            const double d = v;
            v = float(op == "Relu"    ? std::max(d, 0.0)
                    : op == "Sigmoid" ? 1.0 / (1.0 + std::exp(-d))
                    : op == "Tanh"    ? std::tanh(d)
                                      : std::min(std::max(d, lo), hi)); // Clip: min then max, as ONNX (min > max: max)
        }
        return x;
    }

} // namespace

const std::vector<std::string>& mathFoldOperators()
{
    static const std::vector<std::string> ops = { "Clip", "Flatten", "Gemm", "MatMul", "Relu", "Sigmoid", "Tanh" };
    return ops;
}

std::vector<ConstTensor> foldMathOperator(
    const ::onnx::NodeProto& node, const std::vector<const ConstTensor*>& in, const Attributes& a, int64_t opset)
{
    const std::string& op = node.op_type();
    if (op == "MatMul")
        return { matmul(need(in, 0, a), need(in, 1, a), a) };
    if (op == "Gemm")
        return { gemm(in, a) };
    if (op == "Flatten") { // [prod(dims[:axis]), prod(dims[axis:])], axis in [-r, r] (MViT's position table)
        ConstTensor x = need(in, 0, a);
        const int64_t r = int64_t(x.dims.size());
        int64_t axis = a.getInt("axis", 1);
        if (axis < -r || axis > r)
            a.fail("Flatten on axis " + std::to_string(axis) + " of a constant " + npyDimsText(x.dims));
        axis = axis < 0 ? axis + r : axis;
        int64_t outer = 1, inner = 1;
        for (int64_t k = 0; k < r; ++k)
            (k < axis ? outer : inner) *= x.dims[size_t(k)];
        x.dims = { outer, inner };
        return { x };
    }
    return { elementwise(op, in, a, opset) };
}

} // namespace convscope::onnx
