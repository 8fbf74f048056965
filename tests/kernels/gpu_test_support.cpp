#include "tests/kernels/gpu_test_support.h"

#include "compute/backend_registry.h"
#include "tests/test_support.h"

#include <cmath>
#include <iostream>
#include <variant>

namespace convscope::test {

std::shared_ptr<Backend> backendOrSkip(const std::string& name)
{
    auto backend = BackendRegistry::instance().find(name);
    if (!backend) {
        std::cout << "SKIPPED: the " << name << " backend is not registered" << std::endl;
        return nullptr;
    }
    const Availability a = backend->availability();
    if (!a.available) {
        std::cout << "SKIPPED: " << a.reason << std::endl;
        return nullptr;
    }
    return backend;
}

std::shared_ptr<const Tensor> param(const Shape& s, uint64_t seed, bool positive)
{
    Tensor t = test::randomTensor(s, seed);
    if (positive)
        for (int64_t i = 0; i < t.numel(); ++i)
            t.data()[i] = std::fabs(t.data()[i]) + 0.1f;
    return std::make_shared<const Tensor>(std::move(t));
}

Shape vec(int64_t c) { return Shape::nchw(c, 1, 1, 1); }

void randomParameters(Network& net, const ShapeReport& shapes, uint64_t seed)
{
    for (size_t i = 0; i < net.layers.size(); ++i) {
        Layer& l = net.layers[i];
        const LayerShape& s = shapes.layers[i];
        const uint64_t base = seed * 131 + i * 7;
        std::visit(
            [&](const auto& spec) {
                using T = std::decay_t<decltype(spec)>;
                if constexpr (std::is_same_v<T, Conv2d>) {
                    l.weight = param(
                        Shape::nchw(spec.out_channels, s.in.c / spec.groups, spec.kernel_size[0], spec.kernel_size[1]),
                        base + 1);
                    l.bias = spec.bias ? param(vec(spec.out_channels), base + 2) : nullptr;
                } else if constexpr (std::is_same_v<T, ConvTranspose2d>) {
                    l.weight = param(
                        Shape::nchw(s.in.c, spec.out_channels / spec.groups, spec.kernel_size[0], spec.kernel_size[1]),
                        base + 1);
                    l.bias = spec.bias ? param(vec(spec.out_channels), base + 2) : nullptr;
                } else if constexpr (std::is_same_v<T, Linear>) {
                    l.weight = param(Shape::nchw(spec.out_features, s.in.c * s.in.h * s.in.w, 1, 1), base + 1);
                    l.bias = spec.bias ? param(vec(spec.out_features), base + 2) : nullptr;
                } else if constexpr (std::is_same_v<T, BatchNorm2d>) {
                    l.runningMean = param(vec(s.in.c), base + 3);
                    l.runningVar = param(vec(s.in.c), base + 4, true);
                    if (spec.affine) {
                        l.weight = param(vec(s.in.c), base + 1);
                        l.bias = param(vec(s.in.c), base + 2);
                    } else {
                        l.weight = std::make_shared<const Tensor>(Tensor::filled(vec(s.in.c), 1.0f));
                        l.bias = std::make_shared<const Tensor>(Tensor::zeros(vec(s.in.c)));
                    }
                } else if constexpr (std::is_same_v<T, PReLU>) {
                    l.weight = param(vec(spec.num_parameters), base + 1); // slopes of both signs
                }
            },
            l.spec);
    }
}

Network oneLayer(const Shape& in, LayerSpec spec)
{
    Network net;
    net.name = "sweep";
    net.input.batch = in.n;
    net.input.channels = in.c;
    net.input.height = in.h;
    net.input.width = in.w;
    net.input.flat = in.flat;
    net.input.source = "random";
    net.layers.push_back(Layer { "l0", std::move(spec), {}, {}, {}, nullptr, nullptr, nullptr, nullptr });
    return net;
}

} // namespace convscope::test
