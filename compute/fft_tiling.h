// How an FFT convolution (cpu.fft, cuda.fft) cuts a layer into transform tiles: shared by both so they explain
// themselves the same way in a layer's note, and so supports() can refuse a layer before anything is allocated.
//
// Overlap-save: the output is cut into blocks of validH × validW pixels. Each block reads a tileH × tileW window
// of the (zero-padded) input that starts spanH − 1 rows and spanW − 1 columns before the block ends; a circular
// correlation of that window with the kernel is exact on the first validH = tileH − spanH + 1 rows and
// validW = tileW − spanW + 1 columns, and wraps around on the rest, which is thrown away. The span is the dilated
// kernel's extent, (k − 1)·d + 1. A tile as large as the padded input is the lecture's whole-image FFT; smaller
// tiles bound the memory (the kernels' spectra take K·C/g·tileH·(tileW/2+1) complex numbers) and keep the
// transforms in cache, at the price of transforming the overlap twice.
#pragma once

#include "compute/layer_spec.h"
#include "compute/shape_inference.h"

#include <cstdint>
#include <map>
#include <string>

namespace convscope {

struct FftTiling {
    int64_t tileH = 0, tileW = 0; // the transform size
    int64_t spanH = 0, spanW = 0; // the dilated kernel's extent
    int64_t validH = 0, validW = 0; // output pixels one tile yields
    int64_t tilesY = 0, tilesX = 0; // tiles per image
    int64_t freqs = 0; // tileH · (tileW/2 + 1): complex numbers in one plane's half spectrum (the input is real)
    int64_t kernelSpectraBytes = 0; // K · C/g · freqs complex numbers, transformed once per session
    int64_t unitScratchBytes = 0; // one (image, group, tile)'s spectra and real planes: (C/g + K/g)·(8·freqs + 4·N)
    int64_t tiles() const { return tilesY * tilesX; }
    // "overlap-save 128×128 FFT tiles (114×114 outputs each, 9×9 tiles per image), kernel spectra 2 MiB"
    std::string describe() const;
};

// Where the tiles run: the cost model weighs transforms against the per-frequency products differently, and a
// CPU run wants at least one tile per thread.
struct FftTilingTarget {
    int64_t maxTile = 1024; // largest transform side considered (a whole image smaller than this takes one tile)
    int64_t kernelSpectraBudgetBytes = int64_t(1) << 30; // the kernels' spectra must fit in this
    int parallelTiles = 1; // tiles that run at once (CPU threads); 1 on the GPU, which batches them all
    int64_t forcedTile = 0; // option fft_tile=N: square N × N transforms instead of the cost model's choice (0)
    // Flops: the CPU, where the transforms and products are compute-bound in cache. Bytes: the GPU, where they are
    // bound by memory traffic (fft_tiling.cpp gives both models).
    enum class Cost { Flops, Bytes } cost = Cost::Flops;
};

// Why `selection` ("cpu.fft") cannot run this conv2d layer, or empty when it can: stride other than 1, or kernel
// spectra larger than the budget even at the smallest tile.
std::string fftRefusal(
    const Conv2d& conv, const LayerShape& shape, const FftTilingTarget& target, const std::string& selection);

// The cheapest tiling by a flop count of the transforms and the products (docs/PERFORMANCE.md, "## FFT"). Throws
// UnsupportedError with fftRefusal's reason when none fits, InputError when a forced tile is smaller than the span.
FftTiling chooseFftTiling(
    const Conv2d& conv, const LayerShape& shape, const FftTilingTarget& target, const std::string& selection);

// The fft_tile option's value (a session option, "--option fft_tile=64"): 0 when absent; InputError unless a whole
// number from 8 to 4096.
int64_t parseFftTileOption(const std::map<std::string, std::string>& extra);

} // namespace convscope
