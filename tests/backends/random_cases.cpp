// The seeded random cases of the cross-backend test (backend_cases.h): what the per-backend randomized sweeps drew
// (cpu, cuda, cudnn and onednn each had its own copy), drawn once here for every backend. The window kinds draw their
// parameters: padding asymmetric or "same", stride, dilation, groups, output_padding, ceil_mode, both average modes and
// divisor_override, odd and non-square sizes, batch 1 to 3, depths for the 3-D kinds; conv2d also draws layers of 16 to
// 20 channels a group at stride 1, where cpu.tap_gemm's per-tap GEMM applies. Every other kind runs its fixed cases
// (fixed_cases.cpp) at random batch and sizes, so a kind added to the kind table is drawn here without an edit.
// A draw that shape inference rejects (a window larger than the padded input, a crop to nothing) is drawn again.
#include "tests/backends/backend_cases.h"

#include "compute/layer_kinds.h"
#include "compute/shape_inference.h"

#include <random>

using namespace convscope;

namespace {

using Case = test::NetworkCase;

struct Rng {
    std::mt19937_64 gen;
    int64_t operator()(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(gen); }
    bool coin() { return (*this)(0, 1) == 1; }
};

Padding2d randomPadding(Rng& r, int64_t maxTop, int64_t maxLeft)
{
    return { Padding2d::Mode::Explicit, r(0, maxTop), r(0, maxTop), r(0, maxLeft), r(0, maxLeft) };
}

Padding3d randomPadding3d(Rng& r, int64_t most)
{
    return { Padding3d::Mode::Explicit, r(0, most), r(0, most), r(0, most), r(0, most), r(0, most), r(0, most) };
}

Triple triple(Rng& r, int64_t lo, int64_t hi) { return { r(lo, hi), r(lo, hi), r(lo, hi) }; }

// One layer of `spec` on a random input [n, c, (d,) h, w], its data and weights from the case's own seed.
Case oneLayer(const std::string& type, uint64_t seed, int index, int64_t n, int64_t c, int64_t d, int64_t h, int64_t w,
    LayerSpec spec)
{
    test::NetworkBuilder b(type, n, c, h, w, false, 7, seed + uint64_t(index) * 101);
    if (d > 0)
        b.depth(d);
    b.net.input.source = "random:" + std::to_string((seed + uint64_t(index)) & 0x7fffffff);
    b.add("x", std::move(spec));
    const Shape& in = b.net.input.shape();
    return b.done("random " + std::to_string(index) + " on " + in.str());
}

// Draws until `count` cases pass shape inference (at most 50 draws a case).
template <typename Draw> std::vector<Case> draw(int count, Draw&& one)
{
    std::vector<Case> cases;
    for (int attempt = 0; attempt < 50 * count && int(cases.size()) < count; ++attempt) {
        Case c = one(int(cases.size()));
        if (inferShapes(c.net).ok())
            cases.push_back(std::move(c));
    }
    return cases;
}

std::vector<Case> windowCases(const std::string& type, const LayerSpec& kind, Rng& r, uint64_t seed)
{
    if (std::holds_alternative<Conv2d>(kind))
        return draw(16, [&](int i) {
            Conv2d c;
            c.groups = r.coin() ? 1 : r(1, 4);
            const bool taps = r(0, 3) == 0; // 16 to 20 channels a group at stride 1: cpu.tap_gemm's per-tap GEMM
            const int64_t cin = c.groups * (taps ? r(16, 20) : r(1, 5));
            c.out_channels = c.groups * r(1, 6);
            c.kernel_size = { r(1, 5), r(1, 5) };
            c.stride = taps ? Pair { 1, 1 } : Pair { r(1, 3), r(1, 3) };
            c.dilation = { r(1, 2), r(1, 2) };
            c.padding = r(0, 5) == 0 ? Padding2d { Padding2d::Mode::Same } : randomPadding(r, 3, 3);
            c.bias = r(0, 3) != 0;
            return oneLayer(type, seed, i, r(1, 3), cin, 0, r(1, 23), r(1, 23), c);
        });
    if (std::holds_alternative<ConvTranspose2d>(kind))
        return draw(12, [&](int i) {
            ConvTranspose2d c;
            c.groups = r.coin() ? 1 : r(1, 3);
            c.out_channels = c.groups * r(1, 4);
            c.kernel_size = { r(1, 4), r(1, 4) };
            c.stride = { r(1, 3), r(1, 3) };
            c.dilation = { r(1, 3), r(1, 3) };
            c.padding = randomPadding(r, 2, 2);
            // below max(stride, dilation): reaching a whole stride is a crop path of its own
            c.output_padding
                = { r(0, std::max(c.stride[0], c.dilation[0]) - 1), r(0, std::max(c.stride[1], c.dilation[1]) - 1) };
            c.bias = r.coin();
            return oneLayer(type, seed, i, r(1, 3), c.groups * r(1, 4), 0, r(1, 13), r(1, 13), c);
        });
    if (std::holds_alternative<MaxPool2d>(kind) || std::holds_alternative<AvgPool2d>(kind)) {
        const bool max = std::holds_alternative<MaxPool2d>(kind);
        return draw(10, [&](int i) {
            const Pair k { r(1, 4), r(1, 4) };
            const Pair s { r(1, 3), r(1, 3) };
            const Padding2d pad
                = r(0, 4) == 0 ? Padding2d { Padding2d::Mode::Same } : randomPadding(r, k[0] / 2, k[1] / 2);
            LayerSpec spec;
            if (max) {
                MaxPool2d m;
                m.kernel_size = k;
                m.stride = s;
                m.padding = pad;
                m.dilation = r.coin() ? Pair { 1, 1 } : Pair { r(1, 2), r(1, 2) };
                m.ceil_mode = r.coin();
                spec = m;
            } else {
                AvgPool2d a;
                a.kernel_size = k;
                a.stride = s;
                a.padding = pad;
                a.ceil_mode = r.coin();
                a.count_include_pad = r.coin();
                if (r(0, 3) == 0)
                    a.divisor_override = r(1, 7);
                spec = a;
            }
            return oneLayer(type, seed, i, r(1, 3), r(1, 5), 0, r(1, 19), r(1, 19), spec);
        });
    }
    if (std::holds_alternative<GlobalAvgPool2d>(kind))
        return draw(2, [&](int i) {
            return oneLayer(type, seed, i, r(1, 3), r(1, 6), 0, r(1, 64), r(1, 48), GlobalAvgPool2d {});
        });
    return {};
}

std::vector<Case> volumeCases(const std::string& type, const LayerSpec& kind, Rng& r, uint64_t seed)
{
    if (std::holds_alternative<Conv3d>(kind))
        return draw(4, [&](int i) {
            Conv3d c;
            c.groups = r.coin() ? 1 : r(1, 3);
            c.out_channels = c.groups * r(1, 4);
            c.kernel_size = triple(r, 1, 3);
            c.stride = triple(r, 1, 2);
            c.dilation = triple(r, 1, 2);
            c.padding = r(0, 4) == 0 ? Padding3d { Padding3d::Mode::Same } : randomPadding3d(r, 2);
            c.bias = r(0, 3) != 0;
            return oneLayer(type, seed, i, r(1, 2), c.groups * r(1, 3), r(2, 8), r(3, 10), r(3, 10), c);
        });
    if (std::holds_alternative<ConvTranspose3d>(kind))
        return draw(3, [&](int i) {
            ConvTranspose3d c;
            c.groups = r.coin() ? 1 : 2;
            c.out_channels = c.groups * r(1, 3);
            c.kernel_size = triple(r, 1, 3);
            c.stride = triple(r, 1, 2);
            c.dilation = triple(r, 1, 2);
            c.padding = randomPadding3d(r, 1);
            for (int a = 0; a < 3; ++a)
                c.output_padding[size_t(a)] = r(0, std::max(c.stride[size_t(a)], c.dilation[size_t(a)]) - 1);
            c.bias = r.coin();
            return oneLayer(type, seed, i, r(1, 2), c.groups * r(1, 3), r(2, 6), r(2, 6), r(2, 6), c);
        });
    if (std::holds_alternative<MaxPool3d>(kind) || std::holds_alternative<AvgPool3d>(kind)) {
        const bool max = std::holds_alternative<MaxPool3d>(kind);
        return draw(3, [&](int i) {
            const Triple k = triple(r, 1, 3);
            const Triple s = triple(r, 1, 2);
            const Padding3d pad { Padding3d::Mode::Explicit, r(0, k[0] / 2), r(0, k[0] / 2), r(0, k[1] / 2),
                r(0, k[1] / 2), r(0, k[2] / 2), r(0, k[2] / 2) };
            LayerSpec spec;
            if (max) {
                MaxPool3d m;
                m.kernel_size = k;
                m.stride = s;
                m.padding = pad;
                m.dilation = r.coin() ? Triple { 1, 1, 1 } : triple(r, 1, 2);
                m.ceil_mode = r.coin();
                spec = m;
            } else {
                AvgPool3d a;
                a.kernel_size = k;
                a.stride = s;
                a.padding = pad;
                a.ceil_mode = r.coin();
                a.count_include_pad = r.coin();
                if (r(0, 3) == 0)
                    a.divisor_override = r(1, 7);
                spec = a;
            }
            return oneLayer(type, seed, i, r(1, 2), r(1, 3), r(2, 9), r(2, 9), r(2, 9), spec);
        });
    }
    if (std::holds_alternative<GlobalAvgPool3d>(kind))
        return draw(1, [&](int i) {
            return oneLayer(type, seed, i, r(1, 3), r(1, 5), r(1, 9), r(1, 9), r(1, 9), GlobalAvgPool3d {});
        });
    return {};
}

std::vector<Case> padCases(const std::string& type, Rng& r, uint64_t seed)
{
    return draw(4, [&](int i) {
        Pad p;
        p.mode = i == 0 ? Pad::Mode::Constant
            : i == 1    ? Pad::Mode::Reflect
            : i == 2    ? Pad::Mode::Replicate
                        : Pad::Mode(r(0, 2));
        p.padding = { r(0, 3), r(0, 3), r(0, 3), r(0, 3) };
        p.value = double(r(-8, 8)) / 4;
        return oneLayer(type, seed, i, r(1, 3), r(1, 4), 0, r(4, 11), r(4, 11), p); // reflect: each pad < the size
    });
}

// resize: a random mode, coordinate transformation, rounding, cubic parameter, scales or sizes (up and down), on
// images and volumes.
std::vector<Case> resizeCases(const std::string& type, Rng& r, uint64_t seed)
{
    return draw(10, [&](int i) {
        Resize l;
        l.mode = Resize::Mode(r(0, 2));
        l.coordinate_transformation_mode = Resize::Coordinates(r(0, 5));
        l.nearest_mode = Resize::NearestMode(r(0, 3));
        l.cubic_coeff_a = -0.5 - 0.25 * double(r(0, 1));
        l.exclude_outside = r.coin();
        const bool volume = i % 3 == 2;
        const int axes = volume ? 3 : 2;
        l.scale_factor.clear();
        if (r.coin()) {
            for (int k = 0; k < axes; ++k)
                l.size.push_back(r(1, 14));
        } else {
            constexpr double kScales[] = { 0.4, 0.5, 0.75, 1, 1.25, 1.5, 2, 2.5, 3 };
            for (int k = 0; k < axes; ++k)
                l.scale_factor.push_back(kScales[r(0, 8)]);
        }
        return oneLayer(type, seed, i, r(1, 2), r(1, 3), volume ? r(1, 5) : 0, r(1, 9), r(1, 9), l);
    });
}

// The fixed cases of a kind without a window at a random batch and random sizes (flat cases keep theirs).
std::vector<Case> resizedCases(const LayerSpec& kind, Rng& r, uint64_t seed)
{
    std::vector<Case> cases;
    for (Case c : test::fixedCasesFor(kind)) {
        InputSpec& in = c.net.input;
        if (in.flat || !in.dims.empty()) // a general tensor's dims are the layers' own (a reshape's)
            continue;
        in.batch = r(1, 3);
        in.height = r(1, 13);
        in.width = r(1, 13);
        if (in.depth > 0)
            in.depth = r(1, 6);
        in.source = "random:" + std::to_string((seed + cases.size()) & 0x7fffffff);
        for (Layer& l : c.net.layers)
            l.init.seed += seed;
        c.name += " at random sizes " + in.shape().str();
        if (inferShapes(c.net).ok())
            cases.push_back(std::move(c));
    }
    return cases;
}

} // namespace

namespace convscope::test {

std::vector<NetworkCase> randomCasesFor(const LayerSpec& kind, uint64_t seed)
{
    const std::string type = layerTypeName(kind);
    uint64_t salt = 1469598103934665603ULL; // FNV-1a of the kind's name: each kind its own stream, on every platform
    for (const char ch : type)
        salt = (salt ^ uint64_t(uint8_t(ch))) * 1099511628211ULL;
    Rng r { std::mt19937_64(seed ^ salt) };
    if (std::vector<Case> window = windowCases(type, kind, r, seed); !window.empty())
        return window;
    if (std::vector<Case> volume = volumeCases(type, kind, r, seed); !volume.empty())
        return volume;
    if (std::holds_alternative<Pad>(kind))
        return padCases(type, r, seed);
    if (std::holds_alternative<Resize>(kind))
        return resizeCases(type, r, seed);
    if (std::vector<Case> norm = test::randomNormCasesFor(kind, r.gen()); !norm.empty())
        return norm;
    if (std::vector<Case> axes = randomReduceCasesFor(kind, seed); !axes.empty())
        return axes; // softmax, log_softmax, reduce: fixed_cases_reduce.cpp
    return resizedCases(kind, r, seed);
}

std::string caseKind(const NetworkCase& c) { return c.name.substr(0, c.name.find(':')); }

} // namespace convscope::test
