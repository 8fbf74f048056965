// Pictures as network inputs. Decoding and resizing are stb's (the implementations are compiled here, and
// only here, as static functions so they cannot clash with another copy in the process). The samples are
// drawn procedurally with anti-aliased edges, so they look the same at 28x28 and at 1024x1024 and nothing
// has to be found on disk.
#define STB_IMAGE_IMPLEMENTATION
#define STB_IMAGE_STATIC
// Only the decoders a network input needs: every decoder is attack surface for a file someone sent, and the
// fuzzer (tests/fuzz/fuzz_image.cpp) found memory errors in Debian's stb 2.27 itself (what stb is guarded
// against is in stb_input_guards.cpp). PSD, PIC and HDR are off.
#define STBI_ONLY_PNG
#define STBI_ONLY_JPEG
#define STBI_ONLY_BMP
#define STBI_ONLY_GIF
#define STBI_ONLY_TGA
#define STBI_ONLY_PNM
#define STBI_FAILURE_USERMSG
#include "stb_image.h"

#define STB_IMAGE_RESIZE_IMPLEMENTATION
#define STB_IMAGE_RESIZE_STATIC
// stb_image_resize 0.97 (Debian's) asserts that a downsampling filter's raw coefficients sum to < 1.1 before it
// normalises them, and a triangle filter taking 9 columns to 7 sums higher: the fuzzer found a 9-pixel-wide
// picture aborting a debug build. The normalisation that follows makes the result right (a constant picture
// stays exactly constant), so the check is dropped here, as NDEBUG drops it in every release build.
#define STBIR_ASSERT(x) ((void)0)
#include "stb_image_resize.h"

#include "compute/image_input.h"

#include "compute/atomic_file.h"
#include "compute/checked_math.h"
#include "compute/error.h"
#include "compute/memory_budget.h"
#include "compute/stb_input_guards.h"

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <memory>
#include <numbers>
#include <vector>

namespace convscope {

namespace {

    using Rgb = std::array<float, 3>;

    float luminance(const Rgb& c) { return 0.299f * c[0] + 0.587f * c[1] + 0.114f * c[2]; }

    void checkSize(const std::string& what, int64_t batch, int64_t channels, int64_t height, int64_t width)
    {
        if (batch < 1 || channels < 1 || height < 1 || width < 1)
            throw InputError(what + ": the input size [" + std::to_string(batch) + ", " + std::to_string(channels)
                + ", " + std::to_string(height) + ", " + std::to_string(width) + "] must be positive");
        checkedProduct({ batch, channels, height, width, int64_t(sizeof(float)) }, what + ": input");
    }

    // Writes an RGB picture (height x width, interleaved, values in [0, 1]) into an NCHW tensor: RGB for three
    // channels, luminance for one, luminance repeated for any other count; the same picture for every batch item.
    Tensor toTensor(const std::vector<float>& rgb, int64_t batch, int64_t channels, int64_t height, int64_t width)
    {
        Tensor t(Shape::nchw(batch, channels, height, width));
        const int64_t plane = height * width;
        for (int64_t c = 0; c < channels; ++c) {
            float* dst = t.data() + c * plane;
            for (int64_t i = 0; i < plane; ++i) {
                const Rgb px { rgb[3 * i], rgb[3 * i + 1], rgb[3 * i + 2] };
                const float v = channels == 3 ? px[size_t(c)] : luminance(px);
                dst[i] = std::clamp(v, 0.0f, 1.0f);
            }
        }
        for (int64_t n = 1; n < batch; ++n)
            std::copy(t.data(), t.data() + channels * plane, t.data() + n * channels * plane);
        return t;
    }

    // ---- the samples ----------------------------------------------------------------------------------------

    double smoothstep01(double x) { return x <= 0 ? 0 : x >= 1 ? 1 : x * x * (3 - 2 * x); }

    // Coverage of a pixel by a shape whose signed distance (negative inside) is `d`, for a pixel `px` wide:
    // the one-pixel ramp is what makes edges look drawn rather than stair-stepped at 28x28.
    double coverage(double d, double px) { return std::clamp(0.5 - d / px, 0.0, 1.0); }

    struct Arc {
        double cx, cy, r, start, span; // angles in radians, image coordinates (y down), clockwise on screen
        double widthStart, widthEnd; // stroke width, varying along the arc like pen pressure
    };

    // Distance from p to an arc stroke minus its local half width (negative inside the stroke).
    double arcDistance(const Arc& a, double x, double y)
    {
        const double dx = x - a.cx, dy = y - a.cy;
        const double rho = std::hypot(dx, dy);
        double rel = std::atan2(dy, dx) - a.start;
        rel = std::fmod(rel, 2 * std::numbers::pi);
        if (rel < 0)
            rel += 2 * std::numbers::pi;
        double t, dist;
        if (rel <= a.span) {
            t = rel / a.span;
            dist = std::abs(rho - a.r);
        } else {
            // Past either end: the nearer round cap.
            const double ex0 = a.cx + a.r * std::cos(a.start), ey0 = a.cy + a.r * std::sin(a.start);
            const double ex1 = a.cx + a.r * std::cos(a.start + a.span), ey1 = a.cy + a.r * std::sin(a.start + a.span);
            const double d0 = std::hypot(x - ex0, y - ey0), d1 = std::hypot(x - ex1, y - ey1);
            t = d0 < d1 ? 0 : 1;
            dist = std::min(d0, d1);
        }
        const double halfWidth = 0.5 * (a.widthStart + (a.widthEnd - a.widthStart) * t);
        return dist - halfWidth;
    }

    // A handwritten 3 in the unit square, white on black, placed like an MNIST digit (about 20 of 28 pixels
    // tall, centred) and slanted a little to the right.
    std::vector<float> drawDigit(int64_t height, int64_t width)
    {
        constexpr double deg = std::numbers::pi / 180;
        const Arc arcs[] = {
            // upper bowl: from the upper left, over the top, round to the middle
            { 0.49, 0.335, 0.165, -165 * deg, 268 * deg, 0.095, 0.11 },
            // lower bowl: from the middle, round the right side, to the lower left
            { 0.48, 0.645, 0.195, -98 * deg, 260 * deg, 0.11, 0.085 },
        };
        const double px = 1.0 / double(std::min(height, width));
        std::vector<float> rgb(size_t(height * width) * 3);
        for (int64_t yi = 0; yi < height; ++yi) {
            for (int64_t xi = 0; xi < width; ++xi) {
                const double y = (double(yi) + 0.5) / double(height);
                // Undo the slant: a point lower in the picture looks further right in the upright glyph.
                const double x = (double(xi) + 0.5) / double(width) + 0.14 * (y - 0.5);
                double d = 1e9;
                for (const Arc& a : arcs)
                    d = std::min(d, arcDistance(a, x, y));
                // A faint soft halo, as MNIST's scanned strokes have.
                const double v = std::max(coverage(d, px), 0.35 * (1 - smoothstep01((d + 0.5 * px) / (2 * px))));
                const size_t i = size_t(yi * width + xi) * 3;
                rgb[i] = rgb[i + 1] = rgb[i + 2] = float(v);
            }
        }
        return rgb;
    }

    // Shapes, stripes and a checkerboard over a gradient: clear edges in every direction and textures at two
    // scales, for showing what sobel, laplacian and blur filters do. Colours are chosen so the grey version
    // (luminance) keeps every edge.
    Rgb edgesPixel(double x, double y, double px)
    {
        // background: a smooth diagonal gradient, deep blue to violet
        const double g = 0.5 * (x + y);
        Rgb c { float(0.05 + 0.35 * g), float(0.08 + 0.12 * g), float(0.35 + 0.3 * g) };
        const auto blend = [&](const Rgb& top, double alpha) {
            for (int k = 0; k < 3; ++k)
                c[k] = float(c[k] * (1 - alpha) + top[k] * alpha);
        };

        // a bright yellow rectangle, upper left
        {
            const double dx = std::max(0.10 - x, x - 0.45), dy = std::max(0.08 - y, y - 0.34);
            blend({ 1.0f, 0.9f, 0.25f }, coverage(std::max(dx, dy), px));
        }
        // a red disc, upper right
        blend({ 1.0f, 0.4f, 0.2f }, coverage(std::hypot(x - 0.73, y - 0.25) - 0.17, px));
        // diagonal green stripes, lower left
        {
            const double box = std::max(std::max(0.08 - x, x - 0.46), std::max(0.55 - y, y - 0.92));
            const double period = 0.08;
            const double phase = std::fmod((x + y) / period, 1.0);
            const double stripe = (std::abs(phase - 0.5) - 0.25) * period / std::numbers::sqrt2; // < 0 on a stripe
            const double inside = coverage(box, px) * coverage(stripe, px);
            blend({ 0.3f, 0.95f, 0.4f }, inside);
        }
        // a black and white checkerboard, lower right
        {
            const double box = std::max(std::max(0.56 - x, x - 0.92), std::max(0.55 - y, y - 0.91));
            const double cell = 0.09;
            const double u = (x - 0.56) / cell, v = (y - 0.55) / cell;
            // distance to the nearest cell border, signed by the cell colour
            const double du = std::abs(u - std::round(u)) * cell, dv = std::abs(v - std::round(v)) * cell;
            const bool white = (int(std::floor(u)) + int(std::floor(v))) % 2 == 0;
            const double edge = std::min(du, dv);
            const double w = white ? coverage(-edge, px) : 1 - coverage(-edge, px);
            const double alpha = coverage(box, px);
            const float value = float(w);
            blend({ value, value, value }, alpha);
        }
        return c;
    }

    std::vector<float> drawEdges(int64_t height, int64_t width)
    {
        const double px = 1.0 / double(std::min(height, width));
        std::vector<float> rgb(size_t(height * width) * 3);
        for (int64_t yi = 0; yi < height; ++yi) {
            for (int64_t xi = 0; xi < width; ++xi) {
                const Rgb c = edgesPixel((double(xi) + 0.5) / double(width), (double(yi) + 0.5) / double(height), px);
                std::copy(c.begin(), c.end(), rgb.begin() + (yi * width + xi) * 3);
            }
        }
        return rgb;
    }

} // namespace

Tensor decodeImageInput(
    const std::string& bytes, const std::string& what, int64_t batch, int64_t channels, int64_t height, int64_t width)
{
    checkSize(what, batch, channels, height, width);
    if (height > INT_MAX || width > INT_MAX)
        throw InputError(what + ": the input size " + std::to_string(height) + "x" + std::to_string(width)
            + " is too large to resize an image to");
    if (bytes.size() > size_t(INT_MAX))
        throw InputError(what + ": the image file is too large (over 2 GiB)");

    std::string repaired;
    const std::string_view file = guardStbInput(bytes, what, repaired);
    int w = 0, h = 0, comp = 0;
    // The header says how big the picture is; a 20-byte file can claim 16M x 16M pixels. Check what decoding
    // (stb's 8-bit RGB, our float copy, the resized float copy) would take against the budget first.
    if (!stbi_info_from_memory(reinterpret_cast<const stbi_uc*>(file.data()), int(file.size()), &w, &h, &comp))
        throw InputError(what + ": cannot decode the image (" + std::string(stbi_failure_reason()) + ")");
    if (w < 1 || h < 1)
        throw InputError(what + ": the image has no pixels");
    checkHostAllocation(checkedProduct({ int64_t(w), int64_t(h), 3, 1 + int64_t(sizeof(float)) }, what + ": image")
            + checkedProduct({ height, width, 3, int64_t(sizeof(float)) }, what + ": resized image"),
        what + ": decoding a " + std::to_string(w) + "x" + std::to_string(h) + " image");
    // Always decode to RGB: stb repeats a grey image's value and drops alpha, so one path serves every file.
    std::unique_ptr<stbi_uc, void (*)(void*)> pixels(
        stbi_load_from_memory(reinterpret_cast<const stbi_uc*>(file.data()), int(file.size()), &w, &h, &comp, 3),
        stbi_image_free);
    if (!pixels)
        throw InputError(what + ": cannot decode the image (" + std::string(stbi_failure_reason()) + ")");

    const size_t count = size_t(w) * size_t(h) * 3;
    std::vector<float> source(count);
    for (size_t i = 0; i < count; ++i)
        source[i] = float(pixels.get()[i]) / 255.0f;
    pixels.reset();

    std::vector<float> resized;
    if (w == width && h == height) {
        resized = std::move(source);
    } else {
        resized.resize(size_t(height * width) * 3);
        // A triangle filter never overshoots, so a resized image stays in [0, 1] like its pixels.
        if (!stbir_resize_float_generic(source.data(), w, h, 0, resized.data(), int(width), int(height), 0, 3,
                STBIR_ALPHA_CHANNEL_NONE, 0, STBIR_EDGE_CLAMP, STBIR_FILTER_TRIANGLE, STBIR_COLORSPACE_LINEAR, nullptr))
            throw InputError(what + ": cannot resize the image from " + std::to_string(w) + "x" + std::to_string(h)
                + " to " + std::to_string(width) + "x" + std::to_string(height));
    }
    return toTensor(resized, batch, channels, height, width);
}

Tensor loadImageInput(const std::filesystem::path& path, int64_t batch, int64_t channels, int64_t height, int64_t width)
{
    return decodeImageInput(readFile(path, path.string()), path.string(), batch, channels, height, width);
}

ImageSize imageSize(const std::filesystem::path& path)
{
    const std::string bytes = readFile(path, path.string());
    std::string repaired;
    const std::string_view file = guardStbInput(bytes, path.string(), repaired);
    int w = 0, h = 0, comp = 0;
    if (file.size() > size_t(INT_MAX)
        || !stbi_info_from_memory(reinterpret_cast<const stbi_uc*>(file.data()), int(file.size()), &w, &h, &comp))
        throw InputError(path.string() + ": not a readable image (" + std::string(stbi_failure_reason()) + ")");
    return { w, h };
}

std::vector<std::string> sampleNames() { return { "digit", "edges" }; }

Tensor makeSampleInput(const std::string& name, int64_t batch, int64_t channels, int64_t height, int64_t width)
{
    const std::string what = "sample:" + name;
    checkSize(what, batch, channels, height, width);
    checkedProduct({ height, width, 3, int64_t(sizeof(float)) }, what + ": picture");
    if (name == "digit")
        return toTensor(drawDigit(height, width), batch, channels, height, width);
    if (name == "edges")
        return toTensor(drawEdges(height, width), batch, channels, height, width);
    throw InputError(what + ": unknown sample \"" + name + "\" (known: digit, edges)");
}

} // namespace convscope
