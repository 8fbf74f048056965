// The tile chooser of the FFT convolutions (fft_tiling.h says what a tiling is).
//
// Cost model, per (image, group, tile) unit, in flops:
//   transforms   (C/g + K/g) · 2.5 · N · log2 N      N = tileH · tileW; a real transform costs about half of the
//                                                   5 N log2 N of a complex one; C/g forward, K/g inverse
//   products     8 · K/g · C/g · freqs              one complex multiply-add (4 multiplies, 4 adds) per channel
//                                                   pair per frequency
//   copies       2 · (C/g + K/g) · N                 padding into the tile and cropping out of it
// and the layer's time is that times the rounds of units: ceil(units / parallelTiles).
//
// The GPU's model (Cost::Bytes) counts memory traffic instead, because there every step is bound by it:
//   per unit     (C/g + K/g) · (24 · freqs + 12 · N)  bytes: each plane written and read in real and complex form,
//                                                   with cuFFT's passes over it (about three each)
//   products     1.2 per complex multiply-add       8 flops at ~20 TFLOP/s against ~3 TB/s: 0.15 byte per flop
//   spectra      K · C/g · freqs · 8 bytes once      read once per batch: the tiles of a batch share them in L2
// which prefers smaller tiles than the flop count does: the whole-image spectra of 64→64 channels at 256² are
// 1.4 GB that the products would stream from memory for a single tile.
//
// Only 7-smooth transform
// sizes (2^a·3^b·5^c·7^d) are considered: FFTW and cuFFT have fast codelets for those primes and fall back to
// slower general algorithms for others. Small tiles waste the overlap (spanH − 1 rows transformed twice), large
// ones spend log N more per pixel, multiply the kernel spectra's memory and leave threads idle; the minimum is
// usually at a tile a few times the kernel span.
#include "compute/fft_tiling.h"

#include "compute/error.h"

#include <cmath>
#include <limits>
#include <vector>

namespace convscope {

namespace {

    bool smooth(int64_t v)
    {
        for (int64_t p : { 2, 3, 5, 7 })
            while (v % p == 0)
                v /= p;
        return v == 1;
    }

    int64_t smoothAtLeast(int64_t v)
    {
        while (!smooth(v))
            ++v;
        return v;
    }

    std::vector<int64_t> candidates(int64_t span, int64_t padded, int64_t maxTile)
    {
        const int64_t lo = smoothAtLeast(std::max<int64_t>(span, 8));
        const int64_t whole = smoothAtLeast(std::max(padded, lo));
        const int64_t hi = std::min(whole, std::max(maxTile, smoothAtLeast(2 * span)));
        std::vector<int64_t> out;
        for (int64_t t = lo; t <= hi; ++t)
            if (smooth(t))
                out.push_back(t);
        if (out.empty())
            out.push_back(lo);
        return out;
    }

    struct Dims {
        int64_t n, c, k, groups, cg, kg, outH, outW, spanH, spanW;
    };

    Dims layerOf(const Conv2d& conv, const LayerShape& shape)
    {
        const int64_t groups = std::max<int64_t>(conv.groups, 1);
        return { shape.in.n, shape.in.c, shape.out.c, groups, shape.in.c / groups, shape.out.c / groups, shape.out.h,
            shape.out.w, (conv.kernel_size[0] - 1) * conv.dilation[0] + 1,
            (conv.kernel_size[1] - 1) * conv.dilation[1] + 1 };
    }

    FftTiling tilingFor(const Dims& l, int64_t th, int64_t tw)
    {
        FftTiling t;
        t.tileH = th;
        t.tileW = tw;
        t.spanH = l.spanH;
        t.spanW = l.spanW;
        t.validH = th - l.spanH + 1;
        t.validW = tw - l.spanW + 1;
        t.tilesY = (l.outH + t.validH - 1) / t.validH;
        t.tilesX = (l.outW + t.validW - 1) / t.validW;
        t.freqs = th * (tw / 2 + 1);
        t.kernelSpectraBytes = l.k * l.cg * t.freqs * 8;
        t.unitScratchBytes = (l.cg + l.kg) * (t.freqs * 8 + th * tw * 4);
        return t;
    }

    std::string mibText(int64_t bytes)
    {
        return bytes >= (int64_t(1) << 20) ? std::to_string((bytes + (1 << 19)) >> 20) + " MiB"
                                           : std::to_string((bytes + 512) >> 10) + " KiB";
    }

} // namespace

std::string FftTiling::describe() const
{
    const bool whole = tiles() == 1;
    return std::string(whole ? "whole-image " : "overlap-save ") + std::to_string(tileH) + "×" + std::to_string(tileW)
        + " FFT"
        + (whole ? ""
                 : " tiles (" + std::to_string(validH) + "×" + std::to_string(validW) + " outputs each, "
                    + std::to_string(tilesY) + "×" + std::to_string(tilesX) + " tiles per image)")
        + ", kernel spectra " + mibText(kernelSpectraBytes);
}

std::string fftRefusal(
    const Conv2d& conv, const LayerShape& shape, const FftTilingTarget& target, const std::string& selection)
{
    if (!shape.ok)
        return selection + ": " + shape.error;
    if (conv.stride != Pair { 1, 1 })
        return selection + ": stride " + std::to_string(conv.stride[0]) + "×" + std::to_string(conv.stride[1])
            + " is unsupported: an FFT convolution computes every output position (stride 1); use im2col_gemm or "
              "implicit_gemm";
    if (conv.groups < 1 || shape.in.c % conv.groups != 0 || shape.out.c % conv.groups != 0)
        return selection + ": the channels do not split into " + std::to_string(conv.groups) + " groups";
    const Dims l = layerOf(conv, shape);
    const FftTiling smallest = tilingFor(l, candidates(l.spanH, 0, 0).front(), candidates(l.spanW, 0, 0).front());
    const int64_t need = smallest.kernelSpectraBytes + smallest.unitScratchBytes;
    if (need > target.kernelSpectraBudgetBytes)
        return selection + ": the kernels' spectra need " + mibText(need) + " even with the smallest "
            + std::to_string(smallest.tileH) + "×" + std::to_string(smallest.tileW) + " tile, more than the "
            + mibText(target.kernelSpectraBudgetBytes) + " budget (" + std::to_string(l.k) + "×" + std::to_string(l.cg)
            + " channel pairs): FFT pays off for large kernels on few channels";
    return {};
}

FftTiling chooseFftTiling(
    const Conv2d& conv, const LayerShape& shape, const FftTilingTarget& target, const std::string& selection)
{
    if (const std::string why = fftRefusal(conv, shape, target, selection); !why.empty())
        throw UnsupportedError(why);
    const Dims l = layerOf(conv, shape);
    if (target.forcedTile > 0) {
        if (target.forcedTile < std::max(l.spanH, l.spanW))
            throw InputError(selection + ": fft_tile=" + std::to_string(target.forcedTile)
                + " is smaller than the kernel's span of " + std::to_string(std::max(l.spanH, l.spanW)) + " pixels");
        return tilingFor(l, target.forcedTile, target.forcedTile);
    }
    FftTiling best;
    double bestCost = std::numeric_limits<double>::infinity();
    for (int64_t th : candidates(l.spanH, l.outH + l.spanH - 1, target.maxTile)) {
        for (int64_t tw : candidates(l.spanW, l.outW + l.spanW - 1, target.maxTile)) {
            const FftTiling t = tilingFor(l, th, tw);
            const int64_t units = l.n * l.groups * t.tiles();
            const int64_t parallel = std::min<int64_t>(std::max(target.parallelTiles, 1), units);
            if (t.kernelSpectraBytes + parallel * t.unitScratchBytes > target.kernelSpectraBudgetBytes)
                continue;
            const double n = double(th * tw), pairs = double(l.kg * l.cg), freqs = double(t.freqs);
            const double rounds = double((units + parallel - 1) / parallel);
            double cost = 0;
            if (target.cost == FftTilingTarget::Cost::Flops)
                cost = rounds * (double(l.cg + l.kg) * (2.5 * n * std::log2(n) + 2 * n) + 8.0 * pairs * freqs);
            else
                cost = rounds * (double(l.cg + l.kg) * (24 * freqs + 12 * n) + 1.2 * pairs * freqs)
                    + double(t.kernelSpectraBytes);
            if (cost < bestCost) {
                bestCost = cost;
                best = t;
            }
        }
    }
    // Only when the smallest tile fits once but not once per thread: the caller runs fewer tiles at a time.
    if (best.tileH == 0)
        best = tilingFor(l, candidates(l.spanH, 0, 0).front(), candidates(l.spanW, 0, 0).front());
    return best;
}

int64_t parseFftTileOption(const std::map<std::string, std::string>& extra)
{
    const auto it = extra.find("fft_tile");
    if (it == extra.end())
        return 0;
    size_t used = 0;
    int64_t v = 0;
    try {
        v = std::stoll(it->second, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used != it->second.size() || v < 8 || v > 4096)
        throw InputError("fft_tile=" + it->second + ": the FFT tile side is a whole number from 8 to 4096");
    return v;
}

} // namespace convscope
