// The tensor-maths kinds' GPU dispatch (kernels/cuda/tensor_math.h).
#include "kernels/cuda/tensor_math.h"

#include "compute/binary.h"
#include "compute/error.h"
#include "kernels/cuda/binary.cuh"
#include "kernels/cuda/elementwise_math.cuh"

#include <variant>

namespace convscope::cuda {

namespace {
    // Binary's plan and its two operands: the inputs in order, the constant on its side.
    template <typename P>
    BinaryPlan operandsOf(const Binary& l, const LayerShape& s, bool channelsLast, const std::vector<P>& inputs,
        const float* constant, P& a, P& b, bool& aConstant, bool& bConstant)
    {
        const BinaryOperands o = binaryOperands(l, s.ins);
        if (o.constantSide >= 0 && !constant)
            throw Error("binary: the layer's constant was not materialised");
        aConstant = o.constantSide == 0;
        bConstant = o.constantSide == 1;
        size_t next = 0;
        a = aConstant ? P(constant) : inputs.at(next++);
        b = bConstant ? P(constant) : inputs.at(next++);
        return makeBinaryPlan(binaryFnOf(l.op), s.out.dims(), channelsLast, { o.a, channelsLast && !aConstant },
            { o.b, channelsLast && !bConstant });
    }
} // namespace

void runTensorMath(const LayerSpec& spec, const LayerShape& s, const std::vector<const float*>& inputs,
    const float* constant, float* y, cudaStream_t st)
{
    if (const auto* l = std::get_if<Binary>(&spec)) {
        const float *a = nullptr, *b = nullptr;
        bool ac = false, bc = false;
        const BinaryPlan p = operandsOf(*l, s, false, inputs, constant, a, b, ac, bc);
        return binaryBroadcast(p, a, b, y, st);
    }
    std::visit(
        [&](const auto& l) {
            using T = std::decay_t<decltype(l)>;
            if constexpr (isElementwiseMathKind<T>)
                elementwiseMath(mathOpOf(l), s.in.numel(), inputs.at(0), y, st);
            else
                throw Error("runTensorMath: " + layerTypeName(spec) + " is not a tensor-maths kind");
        },
        spec);
}

void runTensorMathStored(const LayerSpec& spec, const LayerShape& s, DType type, const std::vector<const void*>& inputs,
    const float* constant, void* y, cudaStream_t st)
{
    if (const auto* l = std::get_if<Binary>(&spec)) {
        const void *a = nullptr, *b = nullptr;
        bool ac = false, bc = false;
        const BinaryPlan p = operandsOf(*l, s, true, inputs, constant, a, b, ac, bc);
        return binaryBroadcastStored(p, type, a, ac, b, bc, y, st);
    }
    std::visit(
        [&](const auto& l) {
            using T = std::decay_t<decltype(l)>;
            if constexpr (isElementwiseMathKind<T>)
                elementwiseMathStored(mathOpOf(l), s.in.numel(), type, inputs.at(0), y, st);
            else
                throw Error("runTensorMathStored: " + layerTypeName(spec) + " is not a tensor-maths kind");
        },
        spec);
}

} // namespace convscope::cuda
