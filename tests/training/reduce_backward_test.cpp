// The backward of softmax and log_softmax along any axis and of reduce (every op, keepdim or not, ties of max and
// min split evenly as torch.amax's) against finite differences of their forward.
#include "compute/cpu/cpu_ops.h"
#include "compute/reduce.h"
#include "compute/training/cpu_backward_ops.h"
#include "tests/training/gradcheck.h"

using namespace convscope;
using namespace convscope::test;

TEST_CASE("softmax and log_softmax backward along any axis match finite differences", "[training][softmax]")
{
    const std::vector<std::vector<int64_t>> shapes = { { 2, 3, 2, 3 }, { 3, 4, 5 }, { 7 }, { 2, 3, 2, 2, 3, 2 } };
    uint64_t seed = 1200;
    for (const auto& dims : shapes)
        for (int64_t axis = 0; axis < int64_t(dims.size()); ++axis)
            for (bool log : { false, true }) {
                INFO((log ? "log_softmax" : "softmax") << " of rank " << dims.size() << " along " << axis);
                const Shape shape = Shape::of(dims);
                Tensor x = randomTensor(shape, ++seed);
                const Tensor gy = randomTensor(shape, ++seed);
                Tensor y(shape), gx(shape), gxFast(shape);
                cpu::direct::softmax(x, y, axis, log);
                cpu::grad::softmax(gy, y, gx, false, axis, log);
                cpu::grad::softmax(gy, y, gxFast, true, axis, log);
                const auto fwd = [&](Tensor& out) { cpu::direct::softmax(x, out, axis, log); };
                CHECK(relL2(gx, numericalGradient(x, gy, shape, fwd, 1e-2)) < 1e-3);
                CHECK(relL2(gxFast, gx) == 0.0);
            }
}

TEST_CASE("reduce backward matches finite differences for every op", "[training][reduce]")
{
    uint64_t seed = 1300;
    const std::vector<int64_t> dims = { 2, 3, 4, 5 };
    const std::vector<std::vector<int64_t>> axes = { { 1 }, { 2, 3 }, { -1, 0 }, {} };
    for (Reduce::Op op : { Reduce::Op::Mean, Reduce::Op::Sum, Reduce::Op::Max, Reduce::Op::Min, Reduce::Op::L2 })
        for (const auto& dim : axes)
            for (bool keepdim : { false, true }) {
                const Reduce spec { op, dim, keepdim };
                INFO(reduceOpName(op) << " over " << dim.size() << " axes, keepdim " << keepdim);
                const Shape shape = Shape::of(dims), outShape = Shape::of(reduceOutputDims(spec, dims));
                Tensor x = randomTensor(shape, ++seed); // distinct values: no ties for max and min
                const Tensor gy = randomTensor(outShape, ++seed);
                Tensor y(outShape), gx(shape);
                cpu::direct::reduce(x, spec, y);
                cpu::grad::reduce(gy, x, y, spec, gx);
                const auto fwd = [&](Tensor& out) { cpu::direct::reduce(x, spec, out); };
                CHECK(relL2(gx, numericalGradient(x, gy, outShape, fwd, 1e-3)) < 2e-3);
            }
}

TEST_CASE("reduce max backward splits the gradient among ties, as torch.amax", "[training][reduce]")
{
    const Shape shape = Shape::of({ 1, 4 });
    Tensor x(shape), y(Shape::of({ 1 })), gx(shape);
    const float v[] = { 2.0f, 5.0f, 5.0f, 1.0f };
    std::copy(v, v + 4, x.data());
    const Reduce spec { Reduce::Op::Max, { 1 }, false };
    cpu::direct::reduce(x, spec, y);
    CHECK(y.data()[0] == 5.0f);
    Tensor gy = Tensor::filled(y.shape(), 1.0f);
    cpu::grad::reduce(gy, x, y, spec, gx);
    CHECK(gx.data()[0] == 0.0f);
    CHECK(gx.data()[1] == 0.5f);
    CHECK(gx.data()[2] == 0.5f);
    CHECK(gx.data()[3] == 0.0f);
}
