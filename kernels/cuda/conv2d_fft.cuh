// conv2d by FFT on the GPU (cuda.fft): cuFFT for the transforms, our kernels for padding, the per-frequency channel
// sums and the crop. conv2d_fft.cu explains the algorithm. Host-side interface only (no cuFFT types), so
// cuda_backend.cpp includes it without the cuFFT headers.
#pragma once

#include "compute/fft_tiling.h"
#include "kernels/cuda/conv2d.cuh"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <string>

namespace convscope::cuda {

// The GPU's tiling target: transforms up to 2048², at most 2 GiB of kernel spectra and buffers, every tile of a
// chunk in one batch. `forcedTile` (option fft_tile=N, 0 = choose) fixes the transform side.
FftTilingTarget cudaFftTarget(int64_t forcedTile = 0);

// One conv2d layer's FFT plan. Made while the session plans its memory (layerScratchBytes): it chooses the tiling
// and how many tiles go through the transforms at once (bounded by max(256 MiB, the layer's input + output)), and
// creates the cuFFT plans without work areas, so every byte the layer uses is in the session's arena.
class Conv2dFft {
public:
    // Throws UnsupportedError (fft_tiling.h's refusals), OutOfMemoryError (a cuFFT plan could not allocate) or Error
    // (any other cuFFT failure), each naming cuda.fft. maxBatch > 0 caps the tiles per batch (option fft_batch, for
    // tests of the multi-batch path).
    Conv2dFft(const ConvGeometry& g, const FftTiling& tiling, int maxBatch = 0);
    ~Conv2dFft();
    Conv2dFft(const Conv2dFft&) = delete;
    Conv2dFft& operator=(const Conv2dFft&) = delete;

    // The layer's scratch: kernel spectra, a chunk's real tiles and spectra, and cuFFT's work area.
    size_t scratchBytes() const;
    // Transforms the kernels into the scratch's spectra (untimed, once). A temporary buffer for the padded kernels
    // is allocated and freed here.
    void prepare(const float* w, void* scratch, cudaStream_t st);
    // residual: a fused residual add's skip (ConvGeometry::residual; FP32 NCHW like y), or null.
    void run(const float* x, const float* bias, float* y, cudaStream_t st, const float* residual = nullptr);
    // "cuFFT r2c/c2r, overlap-save 64×64 FFT tiles (…), 64 tiles per batch, workspace 120 MiB"
    std::string note() const;

private:
    struct Impl;
    std::unique_ptr<Impl> m;
};

} // namespace convscope::cuda
