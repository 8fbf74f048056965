// conv_transpose3d's phase-tiled kernel (kernels/cuda/transposed_phase_tiled.h) emulated on the CPU, no GPU needed:
// every block of the launch — its phase, its channel tile, its 128 positions — stages the taps with the kernel's own
// tiledStageTaps, a chunk of input channels at a time, and each of its threads accumulates with tiledAccumulateAny
// (the register window and the general path) and writes through tiledOutputIndex; the result must be
// conv_transpose3d by its definition, every output written once. Strides 1–4, dilations 1–3, crops up to and beyond
// the dilated kernel's reach (phases whose GEMM padding would be negative), output padding, groups, kernels smaller
// than the stride (phases no tap reaches: the bias alone), the autoencoder decoder's 5³ stride-4 and one-channel
// layers, at all three tilings and with channel chunks of one and two.
#include "kernels/cuda/transposed_phase_tiled.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <random>
#include <vector>

using namespace convscope::cuda;

namespace {

// Conv3dGeometry's fields (tiledPhasesOf reads them by name).
struct Geometry {
    int n, c, d, h, w;
    int k, od, oh, ow;
    int kd, kh, kw;
    int sd, sh, sw;
    int pd, ph, pw;
    int dd, dh, dw;
    int groups;
};

std::vector<double> reference(
    const Geometry& t, const std::vector<float>& x, const std::vector<float>& w, const std::vector<float>& bias)
{
    const int cg = t.c / t.groups, kg = t.k / t.groups;
    const size_t outVolume = size_t(t.od) * t.oh * t.ow;
    std::vector<double> y(size_t(t.n) * t.k * outVolume);
    for (int img = 0; img < t.n; ++img)
        for (int k = 0; k < t.k; ++k)
            for (size_t e = 0; e < outVolume; ++e)
                y[(size_t(img) * t.k + k) * outVolume + e] = bias[size_t(k)];
    for (int img = 0; img < t.n; ++img)
        for (int c = 0; c < t.c; ++c)
            for (int id = 0; id < t.d; ++id)
                for (int ih = 0; ih < t.h; ++ih)
                    for (int iw = 0; iw < t.w; ++iw)
                        for (int kk = 0; kk < kg; ++kk)
                            for (int rd = 0; rd < t.kd; ++rd)
                                for (int rh = 0; rh < t.kh; ++rh)
                                    for (int rw = 0; rw < t.kw; ++rw) {
                                        const int od = id * t.sd - t.pd + rd * t.dd;
                                        const int oh = ih * t.sh - t.ph + rh * t.dh;
                                        const int ow = iw * t.sw - t.pw + rw * t.dw;
                                        if (od < 0 || od >= t.od || oh < 0 || oh >= t.oh || ow < 0 || ow >= t.ow)
                                            continue;
                                        const int k = c / cg * kg + kk;
                                        y[((size_t(img) * t.k + k) * t.od + od) * t.oh * t.ow + size_t(oh) * t.ow + ow]
                                            += double(x[(((size_t(img) * t.c + c) * t.d + id) * t.h + ih) * t.w + iw])
                                            * w[((((size_t(c) * kg + kk) * t.kd + rd) * t.kh + rh) * t.kw) + rw];
                                    }
    return y;
}

// The launch, block by block and thread by thread, as tiledKernel runs it.
template <int KT, int U>
std::vector<float> emulate(const Geometry& t, int chunk, const std::vector<float>& x, const std::vector<float>& w,
    const std::vector<float>& bias)
{
    TiledPhases p = tiledPhasesOf(t, KT, U);
    if (chunk > 0)
        p.chunk = chunk;
    REQUIRE(p.chunk * tiledMaxTaps(t) * KT <= kTiledSharedFloats);
    std::vector<float> y(size_t(t.n) * t.k * t.od * t.oh * t.ow, NAN), ws(kTiledSharedFloats);
    std::vector<int> writes(y.size(), 0);
    const int kg = t.k / t.groups, cg = t.c / t.groups, ktiles = (kg + KT - 1) / KT;
    const long long positions = tiledPositions(p);
    struct Thread {
        bool active;
        int img, a, u0, v;
        float acc[U][KT];
    };
    std::vector<Thread> threads(kTiledThreads);
    for (int phase = 0; phase < t.sd * t.sh * t.sw; ++phase) {
        const TiledAxis pd = p.ad[phase / (p.sh * p.sw)], ph = p.ah[phase / p.sw % p.sh], pw = p.aw[phase % p.sw];
        if (pd.count == 0 || ph.count == 0 || pw.count == 0)
            continue;
        for (int z = 0; z < t.groups * ktiles; ++z) {
            const int grp = z / ktiles, k0 = z % ktiles * KT;
            for (long long first = 0; first < positions; first += kTiledThreads) {
                for (int tid = 0; tid < kTiledThreads; ++tid) {
                    Thread& th = threads[size_t(tid)];
                    th.active = tiledPosition<U>(p, pd, ph, pw, first + tid, th.img, th.a, th.u0, th.v);
                    for (int u = 0; u < U; ++u)
                        for (int kt = 0; kt < KT; ++kt)
                            th.acc[u][kt] = k0 + kt < kg ? bias[size_t(grp * kg + k0 + kt)] : 0.0f;
                }
                if (pd.taps > 0 && ph.taps > 0 && pw.taps > 0)
                    for (int c0 = 0; c0 < cg; c0 += p.chunk) {
                        std::fill(ws.begin(), ws.end(), NAN); // what a stage does not write must not be read
                        for (int tid = 0; tid < kTiledThreads; ++tid)
                            tiledStageTaps<KT>(p, pd, ph, pw, grp, k0, c0, w.data(), ws.data(), tid, kTiledThreads);
                        for (Thread& th : threads)
                            if (th.active)
                                tiledAccumulateAny<KT, U>(
                                    p, pd, ph, pw, grp, c0, th.img, th.a, th.u0, th.v, x.data(), ws.data(), th.acc);
                    }
                for (const Thread& th : threads)
                    if (th.active)
                        for (int u = 0; u < U; ++u)
                            for (int kt = 0; kt < KT; ++kt)
                                if (th.u0 + u < ph.count && k0 + kt < kg) {
                                    const long long at = tiledOutputIndex(
                                        p, pd, ph, pw, th.img, grp * kg + k0 + kt, th.a, th.u0 + u, th.v);
                                    if (at < 0 || size_t(at) >= y.size()) {
                                        FAIL("output index " << at << " outside the " << y.size() << " outputs");
                                    }
                                    y[size_t(at)] = th.acc[u][kt];
                                    ++writes[size_t(at)];
                                }
            }
        }
    }
    const auto once = std::count(writes.begin(), writes.end(), 1);
    REQUIRE(size_t(once) == writes.size()); // every output written, none twice
    return y;
}

void check(const std::vector<float>& got, const std::vector<double>& want)
{
    REQUIRE(got.size() == want.size());
    size_t worst = 0;
    double worstError = 0;
    for (size_t e = 0; e < want.size(); ++e) {
        const double error = std::isfinite(got[e]) ? std::abs(got[e] - want[e]) : INFINITY;
        if (error > worstError || e == 0)
            worst = e, worstError = error;
    }
    INFO("output " << worst << ": " << got[worst] << " against " << want[worst]);
    CHECK(worstError <= 1e-4);
}

} // namespace

TEST_CASE("cuda: conv_transpose3d's phase-tiled kernel emulated block by block", "[train][cuda]")
{
    std::mt19937 rng(23);
    const auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    std::uniform_real_distribution<float> value(-1.0f, 1.0f);
    // The decoder's 8→16 5³ stride-4 layer (crop 0, 1 behind) and its 32→1 stride-2 output layer (crop 1, 2 behind),
    // with fewer channels and a smaller volume.
    std::vector<Geometry> layers = { { 2, 3, 2, 2, 2, 5, 8, 8, 8, 5, 5, 5, 4, 4, 4, 0, 0, 0, 1, 1, 1, 1 },
        { 1, 5, 4, 3, 4, 1, 8, 6, 8, 5, 5, 5, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1 } };
    while (layers.size() < 34) {
        Geometry t {};
        t.groups = pick(1, 2);
        t.n = pick(1, 2), t.c = t.groups * pick(1, 3), t.k = t.groups * pick(1, 6);
        int* in[3] = { &t.d, &t.h, &t.w };
        int* out[3] = { &t.od, &t.oh, &t.ow };
        int* kernel[3] = { &t.kd, &t.kh, &t.kw };
        int* stride[3] = { &t.sd, &t.sh, &t.sw };
        int* crop[3] = { &t.pd, &t.ph, &t.pw };
        int* dil[3] = { &t.dd, &t.dh, &t.dw };
        bool ok = true;
        for (int a = 0; a < 3; ++a) {
            *in[a] = pick(1, 4), *kernel[a] = pick(1, 5), *stride[a] = pick(1, 4), *dil[a] = pick(1, 3);
            const int reach = *dil[a] * (*kernel[a] - 1);
            *crop[a] = pick(0, reach + 1); // past the reach now and then: a phase's GEMM padding negative
            const int behind = pick(0, reach), outputPadding = pick(0, std::max(*stride[a], *dil[a]) - 1);
            *out[a] = (*in[a] - 1) * *stride[a] - *crop[a] - behind + reach + 1 + outputPadding;
            ok = ok && *out[a] >= 1;
        }
        if (ok)
            layers.push_back(t);
    }
    for (size_t i = 0; i < layers.size(); ++i) {
        const Geometry& t = layers[i];
        INFO("layer " << i << ": c " << t.c << " k " << t.k << " groups " << t.groups << " in " << t.d << "x" << t.h
                      << "x" << t.w << " out " << t.od << "x" << t.oh << "x" << t.ow << " kernel " << t.kd << "x"
                      << t.kh << "x" << t.kw << " stride " << t.sd << "x" << t.sh << "x" << t.sw << " dilation " << t.dd
                      << "x" << t.dh << "x" << t.dw << " crop " << t.pd << "," << t.ph << "," << t.pw);
        std::vector<float> x(size_t(t.n) * t.c * t.d * t.h * t.w),
            w(size_t(t.c) * (t.k / t.groups) * t.kd * t.kh * t.kw), bias(size_t(t.k));
        for (float& e : x)
            e = value(rng);
        for (float& e : w)
            e = value(rng);
        for (float& e : bias)
            e = value(rng);
        const std::vector<double> want = reference(t, x, w, bias);
        const int chunk = i % 3 == 0 ? 1 : i % 3 == 1 ? 2 : 0; // 0: the launcher's own
        check(emulate<1, 8>(t, chunk, x, w, bias), want);
        check(emulate<4, 4>(t, chunk, x, w, bias), want);
        check(emulate<16, 2>(t, chunk, x, w, bias), want);
    }
}
