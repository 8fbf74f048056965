// cpu.fft's conv2d: FFT convolution with FFTW3 (conv2d_fft.cpp explains the algorithm). Unlike the stateless ops
// of cpu_ops.h it keeps state between passes — the kernels' spectra, transformed once, and the per-thread
// buffers — so a CPU session holds one of these per conv2d layer, made in prepare() (untimed).
#pragma once

#include "compute/fft_tiling.h"
#include "compute/layer_spec.h"
#include "compute/shape_inference.h"
#include "compute/tensor.h"

#include <memory>
#include <string>

namespace convscope::cpu {

// The CPU's tiling target: transforms up to 1024², at most 1 GiB of kernel spectra and buffers, one tile per
// OpenMP thread at a time.
FftTilingTarget cpuFftTarget(int64_t forcedTile = 0);

class FftConv2d {
public:
    // Plans the transforms (FFTW_MEASURE, cached per size for the whole process) and transforms the kernels.
    // Throws UnsupportedError (stride, memory budget), OutOfMemoryError, or Error when FFTW cannot plan.
    // forcedTile: the fft_tile option (0 = the cost model chooses).
    FftConv2d(const Conv2d& spec, const LayerShape& shape, const Tensor& weight, int64_t forcedTile = 0);
    ~FftConv2d();
    FftConv2d(const FftConv2d&) = delete;
    FftConv2d& operator=(const FftConv2d&) = delete;

    // out = conv2d(in) + bias, for the shapes given at construction (checked).
    void run(const Tensor& in, const Tensor* bias, Tensor& out);
    // "FFTW r2c/c2r, overlap-save 128×128 FFT tiles (…), kernel spectra 2 MiB, workspace 1 MiB (2 threads)"
    std::string note() const;
    const FftTiling& tiling() const;

private:
    struct Impl;
    std::unique_ptr<Impl> m;
};

} // namespace convscope::cpu
