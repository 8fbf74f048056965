// Network inputs from pictures: image files through stb_image (PNG, JPEG, BMP, ...) and the built-in
// samples. Pixels become floats in [0, 1]; one channel is luminance, three are RGB; the picture is
// resized (stb_image_resize, bilinear-like triangle filter) to the network's input size and repeated
// over the batch.
#pragma once

#include "compute/tensor.h"

#include <filesystem>
#include <string>
#include <vector>

namespace convscope {

Tensor loadImageInput(
    const std::filesystem::path& path, int64_t batch, int64_t channels, int64_t height, int64_t width);
Tensor decodeImageInput(
    const std::string& bytes, const std::string& what, int64_t batch, int64_t channels, int64_t height, int64_t width);

// The pixel size of an image file without decoding it (convscope-cli run --input keeps the image's own
// size). Throws InputError naming the file when it is not a readable image.
struct ImageSize {
    int64_t width = 0, height = 0;
};
ImageSize imageSize(const std::filesystem::path& path);

// Built-in samples, drawn procedurally so nothing has to be found on disk:
//   "digit"  a handwritten-style 3 on black, for 28x28 networks (MNIST-like)
//   "edges"  shapes, stripes, a checkerboard and a gradient: clear edges and textures for classic filters
std::vector<std::string> sampleNames();
Tensor makeSampleInput(const std::string& name, int64_t batch, int64_t channels, int64_t height, int64_t width);

} // namespace convscope
