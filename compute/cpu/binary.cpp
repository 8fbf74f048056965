// The binary kind on the CPU (issue 30): out[i] = a[offA(i)] op b[offB(i)] with NumPy's broadcasting (the plan's
// strides, compute/binary_math.h). direct:: evaluates in double on one thread; fast:: in float across the OpenMP team
// (compute/cpu_threads.h), each thread a contiguous block of the output.
#include "compute/cpu/cpu_ops.h"
#include "compute/cpu/op_common.h"
#include "compute/error.h"

namespace convscope::cpu {

namespace {
    template <typename Real>
    void binaryLoop(const float* a, const float* b, const BinaryPlan& p, Tensor& out, bool parallel)
    {
        detail::require(out.numel() == p.count, "binary", "the output does not hold the broadcast shape's elements");
        float* y = out.data();
        const int64_t count = p.count;
#pragma omp parallel for schedule(static) if (parallel && count >= detail::kMinParallelElements)
        for (int64_t i = 0; i < count; ++i) {
            int64_t oa = 0, ob = 0;
            binaryOffsets(p, i, oa, ob);
            y[i] = static_cast<float>(applyBinary<Real>(p.fn, Real(a[oa]), Real(b[ob])));
        }
    }
} // namespace

void direct::binary(const float* a, const float* b, const BinaryPlan& plan, Tensor& out)
{
    binaryLoop<double>(a, b, plan, out, false);
}

void fast::binary(const float* a, const float* b, const BinaryPlan& plan, Tensor& out)
{
    binaryLoop<float>(a, b, plan, out, true);
}

} // namespace convscope::cpu

namespace convscope::cpu {

BinaryPlan binaryLayerPlan(const Binary& l, const LayerShape& s, const std::vector<const Tensor*>& ins,
    const Tensor* constant, const float*& a, const float*& b)
{
    const BinaryOperands o = binaryOperands(l, s.ins);
    if (o.constantSide >= 0 && !constant)
        throw Error("binary: the layer's constant was not materialised");
    size_t next = 0;
    a = o.constantSide == 0 ? constant->data() : ins.at(next++)->data();
    b = o.constantSide == 1 ? constant->data() : ins.at(next++)->data();
    return makeBinaryPlan(binaryFnOf(l.op), s.out.dims(), false, { o.a, false }, { o.b, false });
}

void runBinary(const Binary& l, const LayerShape& s, const std::vector<const Tensor*>& ins, const Tensor* constant,
    Tensor& out, bool fast)
{
    const float *a = nullptr, *b = nullptr;
    const BinaryPlan p = binaryLayerPlan(l, s, ins, constant, a, b);
    fast ? fast::binary(a, b, p, out) : direct::binary(a, b, p, out);
}

} // namespace convscope::cpu
