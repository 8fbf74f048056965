// The stride-phase plan of the cuda training session's transposed convolutions (kernels/cuda/training/
// transposed_phase_plan.h) emulated on the CPU, no GPU needed: each class's taps gathered by the kernel's own
// gatheredTapSource, its stride-1 convolution by the definition (the class geometry's padding and dilation), its
// outputs spread into every s-th row and column — against the transposed convolution by its definition, for strides
// 1–3, dilations 1–3, crops up to the dilated kernel's reach, output padding, groups and kernels smaller than the
// stride (classes no tap reaches).
#include "kernels/cuda/transposed_phase_plan.h"

#include <catch2/catch.hpp>

#include <array>
#include <random>
#include <vector>

using namespace convscope::cuda;

namespace {

// y = the transposed convolution of x [n, c, h, w] with w [c, k/g, r, s] by its definition (no bias).
std::vector<double> referenceTransposed(const PhaseShape& t, const std::vector<double>& x, const std::vector<double>& w)
{
    const int cg = t.c / t.groups, kg = t.k / t.groups;
    std::vector<double> y(size_t(t.n) * t.k * t.p * t.q, 0.0);
    for (int img = 0; img < t.n; ++img)
        for (int c = 0; c < t.c; ++c)
            for (int ih = 0; ih < t.h; ++ih)
                for (int iw = 0; iw < t.w; ++iw)
                    for (int k = 0; k < kg; ++k)
                        for (int r = 0; r < t.r; ++r)
                            for (int s = 0; s < t.s; ++s) {
                                const int oh = ih * t.strideH - t.padTop + r * t.dilH;
                                const int ow = iw * t.strideW - t.padLeft + s * t.dilW;
                                if (oh < 0 || oh >= t.p || ow < 0 || ow >= t.q)
                                    continue;
                                const int grp = c / cg, ko = grp * kg + k;
                                y[((size_t(img) * t.k + ko) * t.p + oh) * t.q + ow]
                                    += x[((size_t(img) * t.c + c) * t.h + ih) * t.w + iw]
                                    * w[((size_t(c) * kg + k) * t.r + r) * t.s + s];
                            }
    return y;
}

// The same through the plan: per class, the gathered weight [k, c/g, J, L] and a stride-1 convolution.
std::vector<double> throughPlan(const PhaseShape& t, const std::vector<double>& x, const std::vector<double>& w)
{
    std::vector<double> y(size_t(t.n) * t.k * t.p * t.q, -1e30); // every element must be written
    const int cg = t.c / t.groups, kg = t.k / t.groups;
    for (const PhaseClass& pc : transposedPhasePlan(t)) {
        const PhaseShape& g = pc.conv;
        const int taps = pc.row.taps * pc.col.taps;
        std::vector<double> wc(size_t(t.k) * cg * taps);
        for (size_t e = 0; e < wc.size(); ++e)
            wc[e] = w[size_t(gatheredTapSource((long long)e, cg, kg, 1, t.r, t.s, flatAxis(), pc.row, pc.col))];
        for (int img = 0; img < t.n; ++img)
            for (int k = 0; k < t.k; ++k)
                for (int u = 0; u < g.p; ++u)
                    for (int v = 0; v < g.q; ++v) {
                        double sum = 0;
                        if (pc.hasTaps()) {
                            const int grp = k / kg;
                            for (int c = 0; c < cg; ++c)
                                for (int j = 0; j < g.r; ++j)
                                    for (int l = 0; l < g.s; ++l) {
                                        const int ih = u - g.padTop + j * g.dilH, iw = v - g.padLeft + l * g.dilW;
                                        if (ih < 0 || ih >= g.h || iw < 0 || iw >= g.w)
                                            continue;
                                        sum += x[((size_t(img) * t.c + grp * cg + c) * t.h + ih) * t.w + iw]
                                            * wc[((size_t(k) * cg + c) * g.r + j) * g.s + l];
                                    }
                        }
                        const int oh = pc.row.first + t.strideH * u, ow = pc.col.first + t.strideW * v;
                        y[((size_t(img) * t.k + k) * t.p + oh) * t.q + ow] = sum;
                    }
    }
    return y;
}

} // namespace

TEST_CASE("cuda training: a transposed convolution as stride-1 convolutions per stride phase", "[train][cuda]")
{
    std::mt19937 rng(7);
    const auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    std::uniform_real_distribution<double> value(-1.0, 1.0);
    int planned = 0, refused = 0;
    for (int trial = 0; trial < 400; ++trial) {
        PhaseShape t {};
        t.groups = pick(1, 2);
        t.n = pick(1, 2), t.c = t.groups * pick(1, 3), t.k = t.groups * pick(1, 3);
        t.h = pick(1, 6), t.w = pick(1, 6);
        t.r = pick(1, 5), t.s = pick(1, 5);
        t.strideH = pick(1, 3), t.strideW = pick(1, 3);
        t.dilH = pick(1, 3), t.dilW = pick(1, 3);
        t.padTop = pick(0, t.dilH * (t.r - 1) + 1), t.padLeft = pick(0, t.dilW * (t.s - 1) + 1);
        const int padBottom = pick(0, t.dilH * (t.r - 1)), padRight = pick(0, t.dilW * (t.s - 1));
        t.p = (t.h - 1) * t.strideH - t.padTop - padBottom + t.dilH * (t.r - 1) + 1 + pick(0, t.strideH - 1);
        t.q = (t.w - 1) * t.strideW - t.padLeft - padRight + t.dilW * (t.s - 1) + 1 + pick(0, t.strideW - 1);
        if (t.p < 1 || t.q < 1)
            continue;
        INFO("trial " << trial << ": c " << t.c << " k " << t.k << " groups " << t.groups << " in " << t.h << "x" << t.w
                      << " out " << t.p << "x" << t.q << " kernel " << t.r << "x" << t.s << " stride " << t.strideH
                      << "x" << t.strideW << " dilation " << t.dilH << "x" << t.dilW << " crop " << t.padTop << ","
                      << t.padLeft);
        if (!transposedPhasePlanApplies(t)) {
            // With stride 1 only a crop beyond the dilated kernel's reach makes the padding negative.
            CHECK((t.strideH > 1 || t.strideW > 1 || t.padTop > t.dilH * (t.r - 1) || t.padLeft > t.dilW * (t.s - 1)));
            ++refused;
            continue;
        }
        std::vector<double> x(size_t(t.n) * t.c * t.h * t.w), w(size_t(t.c) * (t.k / t.groups) * t.r * t.s);
        for (double& e : x)
            e = value(rng);
        for (double& e : w)
            e = value(rng);
        const std::vector<double> want = referenceTransposed(t, x, w), got = throughPlan(t, x, w);
        for (size_t e = 0; e < want.size(); ++e)
            REQUIRE(got[e] == Approx(want[e]).margin(1e-12));
        ++planned;
    }
    CHECK(planned > 120); // 157 of the 400 draws with this seed
    CHECK(refused > 0);
}

TEST_CASE(
    "cuda training: the stride-phase plan of stride 1 is the flipped kernel over the whole output", "[train][cuda]")
{
    PhaseShape t {};
    t.n = 2, t.c = 8, t.k = 4, t.h = 7, t.w = 9, t.p = 7, t.q = 9, t.r = 3, t.s = 3;
    t.strideH = t.strideW = 1, t.padTop = t.padLeft = 1, t.dilH = t.dilW = 1, t.groups = 1;
    const std::vector<PhaseClass> plan = transposedPhasePlan(t);
    REQUIRE(plan.size() == 1);
    CHECK(transposedPhasePlanIsDirect(t));
    CHECK(plan[0].conv.p == 7);
    CHECK(plan[0].conv.q == 9);
    CHECK(plan[0].conv.padTop == 1); // d·(R − 1) − pad
    CHECK(plan[0].conv.r == 3);
    CHECK(plan[0].row.first == 0);
}

TEST_CASE("cuda training: the stride-phase plan takes the strided layers of ResNet, DCGAN and U-Net", "[train][cuda]")
{
    // {kernel, stride, crop}: ResNet's 3×3/2 and 1×1/2 (as conv2d backward-data), DCGAN's 4×4/2 crop 1, U-Net's 2×2/2.
    for (const auto& [kernel, stride, crop] : std::vector<std::array<int, 3>> {
             { 3, 2, 1 }, { 1, 2, 0 }, { 4, 2, 1 }, { 2, 2, 0 }, { 3, 2, 0 }, { 7, 2, 3 } }) {
        PhaseShape t {};
        t.n = 1, t.c = 4, t.k = 4, t.h = 8, t.w = 8, t.r = t.s = kernel, t.strideH = t.strideW = stride;
        t.padTop = t.padLeft = crop, t.dilH = t.dilW = 1, t.groups = 1;
        t.p = t.q = (t.h - 1) * stride - 2 * crop + kernel + (kernel + stride) % 2; // output padding where it fits
        INFO(kernel << "x" << kernel << " stride " << stride << " crop " << crop);
        CHECK(transposedPhasePlanApplies(t));
        CHECK(transposedPhasePlan(t).size() == size_t(stride * stride));
    }
}

TEST_CASE("cuda: conv_transpose3d as stride-1 convolutions per stride phase (the three axes' classes)", "[train][cuda]")
{
    // The autoencoder's decoder layers (5³ kernels, stride 4 with crop 0 and stride 2 with crop 1, asymmetric) and
    // random ones, at small sizes: every phase's gathered taps (gatheredTapSource with depth) and its convolution by
    // the definition, spread, against conv_transpose3d by its definition.
    struct Axis {
        int in, out, kernel, stride, crop, dil;
    };
    std::mt19937 rng(11);
    const auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    std::vector<std::array<Axis, 3>> layers
        = { { { { 2, 8, 5, 4, 0, 1 }, { 2, 8, 5, 4, 0, 1 }, { 2, 8, 5, 4, 0, 1 } } },
              { { { 3, 6, 5, 2, 1, 1 }, { 3, 6, 5, 2, 1, 1 }, { 3, 6, 5, 2, 1, 1 } } } };
    for (int trial = 0; trial < 40; ++trial) {
        std::array<Axis, 3> a {};
        for (Axis& x : a) {
            x.in = pick(1, 3), x.kernel = pick(1, 4), x.stride = pick(1, 3), x.dil = pick(1, 2);
            x.crop = pick(0, x.dil * (x.kernel - 1));
            x.out = (x.in - 1) * x.stride - x.crop + x.dil * (x.kernel - 1) + 1 - pick(0, x.crop);
        }
        if (a[0].out > 0 && a[1].out > 0 && a[2].out > 0)
            layers.push_back(a);
    }
    int planned = 0;
    for (const auto& a : layers) {
        const int c = 2, k = 3;
        bool applies = true;
        std::array<std::vector<PhaseAxis>, 3> classes;
        for (int i = 0; i < 3; ++i) {
            classes[size_t(i)] = phaseAxes(
                a[size_t(i)].out, a[size_t(i)].stride, a[size_t(i)].crop, a[size_t(i)].dil, a[size_t(i)].kernel);
            for (const PhaseAxis& x : classes[size_t(i)])
                applies = applies && !(x.count > 0 && x.taps > 0 && x.padBefore < 0);
        }
        if (!applies)
            continue;
        ++planned;
        std::uniform_real_distribution<double> value(-1.0, 1.0);
        const size_t inVolume = size_t(a[0].in) * a[1].in * a[2].in, outVolume = size_t(a[0].out) * a[1].out * a[2].out;
        const size_t taps = size_t(a[0].kernel) * a[1].kernel * a[2].kernel;
        std::vector<double> x(c * inVolume), w(size_t(c) * k * taps), want(k * outVolume, 0.0),
            got(k * outVolume, 1e30);
        for (double& e : x)
            e = value(rng);
        for (double& e : w)
            e = value(rng);
        const auto outAt
            = [&](int ko, int d, int h, int v) { return ((size_t(ko) * a[0].out + d) * a[1].out + h) * a[2].out + v; };
        for (int ci = 0; ci < c; ++ci)
            for (int ko = 0; ko < k; ++ko)
                for (size_t e = 0; e < inVolume; ++e)
                    for (size_t t = 0; t < taps; ++t) {
                        const int id = int(e / (a[1].in * a[2].in)), ih = int(e / a[2].in % a[1].in),
                                  iw = int(e % a[2].in);
                        const int td = int(t / (a[1].kernel * a[2].kernel)), th = int(t / a[2].kernel % a[1].kernel),
                                  tw = int(t % a[2].kernel);
                        const int od = id * a[0].stride - a[0].crop + td * a[0].dil;
                        const int oh = ih * a[1].stride - a[1].crop + th * a[1].dil;
                        const int ow = iw * a[2].stride - a[2].crop + tw * a[2].dil;
                        if (od < 0 || od >= a[0].out || oh < 0 || oh >= a[1].out || ow < 0 || ow >= a[2].out)
                            continue;
                        want[outAt(ko, od, oh, ow)]
                            += x[size_t(ci) * inVolume + e] * w[(size_t(ci) * k + ko) * taps + t];
                    }
        for (const PhaseAxis& pd : classes[0])
            for (const PhaseAxis& ph : classes[1])
                for (const PhaseAxis& pw : classes[2]) {
                    const int ct = pd.taps * ph.taps * pw.taps;
                    std::vector<double> wc(size_t(k) * c * ct);
                    for (size_t e = 0; e < wc.size(); ++e)
                        wc[e] = w[size_t(
                            gatheredTapSource((long long)e, c, k, a[0].kernel, a[1].kernel, a[2].kernel, pd, ph, pw))];
                    for (int ko = 0; ko < k; ++ko)
                        for (int u0 = 0; u0 < pd.count; ++u0)
                            for (int u1 = 0; u1 < ph.count; ++u1)
                                for (int u2 = 0; u2 < pw.count; ++u2) {
                                    double sum = 0;
                                    for (int ci = 0; ci < c; ++ci)
                                        for (int j0 = 0; j0 < pd.taps; ++j0)
                                            for (int j1 = 0; j1 < ph.taps; ++j1)
                                                for (int j2 = 0; j2 < pw.taps; ++j2) {
                                                    const int id = u0 - pd.padBefore + j0 * pd.dil;
                                                    const int ih = u1 - ph.padBefore + j1 * ph.dil;
                                                    const int iw = u2 - pw.padBefore + j2 * pw.dil;
                                                    if (id < 0 || id >= a[0].in || ih < 0 || ih >= a[1].in || iw < 0
                                                        || iw >= a[2].in)
                                                        continue;
                                                    sum += x[size_t(ci) * inVolume
                                                               + (size_t(id) * a[1].in + ih) * a[2].in + iw]
                                                        * wc[((size_t(ko) * c + ci) * pd.taps + j0) * ph.taps * pw.taps
                                                            + j1 * pw.taps + j2];
                                                }
                                    got[outAt(ko, pd.first + a[0].stride * u0, ph.first + a[1].stride * u1,
                                        pw.first + a[2].stride * u2)]
                                        = sum;
                                }
                }
        for (size_t e = 0; e < want.size(); ++e)
            REQUIRE(got[e] == Approx(want[e]).margin(1e-12));
    }
    CHECK(planned >= 15); // 17 with this seed, the decoder's two among them
}
