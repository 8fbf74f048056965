#include "kernels/cuda/cuda_options.h"

#include "compute/error.h"
#include "kernels/cuda/conv2d.cuh"

#include <stdexcept>
#include <string>

namespace convscope::cuda {

// cuda.winograd's output tile: F(4×4, 3×3) unless the run asks for F(2×2, 3×3) (--option winograd_tile=2).
int winogradTileOf(const SessionOptions& options)
{
    const auto it = options.extra.find("winograd_tile");
    if (it == options.extra.end() || it->second == "4")
        return 4;
    if (it->second == "2")
        return 2;
    throw InputError("winograd_tile=" + it->second + ": the Winograd output tile is 2 (F(2x2,3x3)) or 4 (F(4x4,3x3))");
}

int igemmTileOf(const SessionOptions& options)
{
    const auto it = options.extra.find("igemm_tile");
    return it == options.extra.end() ? 0 : parseImplicitGemmTile(it->second);
}

int igemmSplitsOf(const SessionOptions& options)
{
    const auto it = options.extra.find("igemm_splits");
    return it == options.extra.end() ? 0 : parseImplicitGemmSplits(it->second);
}

int tinyLanesOf(const SessionOptions& options)
{
    const auto it = options.extra.find("tiny_lanes");
    if (it == options.extra.end())
        return 0;
    for (int lanes : { 1, 2, 4, 8, 16, 32 })
        if (it->second == std::to_string(lanes))
            return lanes;
    throw InputError(
        "tiny_lanes=" + it->second + ": the tiny-layer kernel takes 1, 2, 4, 8, 16 or 32 lanes per output");
}

// cuda.fft's tiles per batch of transforms (--option fft_batch=N): 0 lets the layer's workspace bound decide.
int fftBatchOf(const SessionOptions& options)
{
    const auto it = options.extra.find("fft_batch");
    if (it == options.extra.end())
        return 0;
    size_t used = 0;
    int v = 0;
    try {
        v = std::stoi(it->second, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used != it->second.size() || v < 1)
        throw InputError("fft_batch=" + it->second + ": the tiles per FFT batch is a whole number of at least 1");
    return v;
}

int wholeNumberIn(const std::string& text, int low, int high)
{
    if (text.empty() || text.size() > std::to_string(high).size()
        || text.find_first_not_of("0123456789") != std::string::npos)
        return 0;
    const int n = std::stoi(text);
    return n >= low && n <= high ? n : 0;
}

int transposedGemmOf(const SessionOptions& options)
{
    const auto it = options.extra.find("transposed_gemm");
    if (it == options.extra.end() || it->second == "auto")
        return 0;
    if (it->second == "on" || it->second == "off")
        return it->second == "on" ? 1 : -1;
    throw InputError("transposed_gemm=" + it->second + ": the stride phases as GEMMs take auto, on or off");
}

int transposedTileOf(const SessionOptions& options)
{
    const auto it = options.extra.find("transposed_tile");
    if (it == options.extra.end())
        return 0;
    for (const auto& [name, channels] : { std::pair { "1x8", 1 }, { "4x4", 4 }, { "16x2", 16 } })
        if (it->second == name)
            return channels;
    throw InputError("transposed_tile=" + it->second + ": the phase-tiled kernel takes 1x8, 4x4 or 16x2");
}

namespace {
    // The value of `key`, which must be `first` or `second`; `first` when the run does not set it.
    bool firstOf(
        const SessionOptions& options, const char* key, const char* first, const char* second, const char* what)
    {
        const auto it = options.extra.find(key);
        if (it == options.extra.end() || it->second == first)
            return true;
        if (it->second == second)
            return false;
        throw InputError(
            std::string(key) + "=" + it->second + ": " + what + " (" + first + ", the default) or " + second);
    }
} // namespace

bool trainsOnInferenceKernel(const SessionOptions& options)
{
    return firstOf(options, "train_tiles", "inference", "pipelined",
        "cuda.tensor_core's training convolutions run on the inference Tensor Core kernel or on the pipelined implicit "
        "GEMM's tiles");
}

bool winogradWeightGradientOf(const SessionOptions& options)
{
    return firstOf(options, "winograd_wgrad", "on", "off",
        "the 3x3 stride-1 weight gradients of cuda.winograd and of cuda.tensor_core in tf32 run Winograd F(3x3,2x2) "
        "or the implicit GEMM");
}

} // namespace convscope::cuda
