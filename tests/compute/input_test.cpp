// Network inputs: the drawn samples, decoding a PNG made here with stb_image_write, and every source kind of
// loadInput (samples, seeded random data, images, .npy arrays) with the shape checks.
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#endif
#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STB_IMAGE_WRITE_STATIC
#include <stb/stb_image_write.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

#include "compute/atomic_file.h"
#include "compute/error.h"
#include "compute/image_input.h"
#include "compute/load_input.h"
#include "compute/network.h"
#include "compute/npy.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

#include <cmath>

using namespace convscope;
using Catch::Matchers::Contains;

namespace {

// A PNG of `w` x `h` pixels with `comp` channels, encoded in memory.
std::string png(int w, int h, int comp, const std::vector<unsigned char>& pixels)
{
    std::string out;
    const auto sink = [](void* context, void* data, int size) {
        static_cast<std::string*>(context)->append(static_cast<const char*>(data), size_t(size));
    };
    REQUIRE(stbi_write_png_to_func(sink, &out, w, h, comp, pixels.data(), w * comp) != 0);
    return out;
}

float minOf(const Tensor& t) { return *std::min_element(t.data(), t.data() + t.numel()); }
float maxOf(const Tensor& t) { return *std::max_element(t.data(), t.data() + t.numel()); }
double meanOf(const Tensor& t)
{
    double s = 0;
    for (int64_t i = 0; i < t.numel(); ++i)
        s += t.data()[i];
    return s / double(t.numel());
}

bool samePlane(const Tensor& a, int64_t na, int64_t ca, const Tensor& b, int64_t nb, int64_t cb)
{
    for (int64_t y = 0; y < a.shape().h; ++y)
        for (int64_t x = 0; x < a.shape().w; ++x)
            if (a.at(na, ca, y, x) != b.at(nb, cb, y, x))
                return false;
    return true;
}

} // namespace

TEST_CASE("input: the digit sample is a white 3 on black, placed like an MNIST digit", "[input]")
{
    const Tensor t = makeSampleInput("digit", 1, 1, 28, 28);
    REQUIRE(t.shape() == Shape::nchw(1, 1, 28, 28));
    CHECK(minOf(t) == 0.0f);
    CHECK(maxOf(t) == 1.0f);
    // Mostly background, like MNIST (mean intensity about 0.13).
    CHECK(meanOf(t) > 0.08);
    CHECK(meanOf(t) < 0.3);
    // A border of black, like MNIST's 20x20 digit in a 28x28 frame.
    for (int64_t i = 0; i < 28; ++i) {
        CHECK(t.at(0, 0, 0, i) == 0.0f);
        CHECK(t.at(0, 0, 27, i) == 0.0f);
        CHECK(t.at(0, 0, i, 0) == 0.0f);
        CHECK(t.at(0, 0, i, 27) == 0.0f);
    }
    // A 3: strokes on the right at the height of both bowls, the left open at mid height.
    const auto rowMax = [&](int64_t y, int64_t x0, int64_t x1) {
        float m = 0;
        for (int64_t x = x0; x < x1; ++x)
            m = std::max(m, t.at(0, 0, y, x));
        return m;
    };
    CHECK(rowMax(9, 14, 24) > 0.9f);
    CHECK(rowMax(18, 14, 24) > 0.9f);
    CHECK(rowMax(13, 2, 9) == 0.0f);
    CHECK(rowMax(16, 2, 9) == 0.0f);
    // The same drawing at any size: the large version, sampled down, has its ink in the same places.
    const Tensor big = makeSampleInput("digit", 1, 1, 280, 280);
    CHECK(std::abs(meanOf(big) - meanOf(t)) < 0.05);
    CHECK(big.at(0, 0, 135, 40) == 0.0f);
}

TEST_CASE("input: samples fill every channel and repeat over the batch", "[input]")
{
    const Tensor rgb = makeSampleInput("edges", 2, 3, 40, 60);
    REQUIRE(rgb.shape() == Shape::nchw(2, 3, 40, 60));
    CHECK(minOf(rgb) >= 0.0f);
    CHECK(maxOf(rgb) <= 1.0f);
    for (int64_t c = 0; c < 3; ++c)
        CHECK(samePlane(rgb, 0, c, rgb, 1, c));
    // Colourful: the channels differ markedly somewhere.
    double largest = 0;
    for (int64_t y = 0; y < 40; ++y)
        for (int64_t x = 0; x < 60; ++x)
            largest = std::max(largest, double(std::abs(rgb.at(0, 0, y, x) - rgb.at(0, 2, y, x))));
    CHECK(largest > 0.5);

    // One channel is the luminance of the colour picture; other counts repeat it.
    const Tensor grey = makeSampleInput("edges", 1, 1, 40, 60);
    const Tensor four = makeSampleInput("edges", 1, 4, 40, 60);
    for (int64_t y = 0; y < 40; y += 3)
        for (int64_t x = 0; x < 60; x += 3) {
            const float lum = 0.299f * rgb.at(0, 0, y, x) + 0.587f * rgb.at(0, 1, y, x) + 0.114f * rgb.at(0, 2, y, x);
            CHECK(grey.at(0, 0, y, x) == Approx(lum).margin(1e-6));
        }
    for (int64_t c = 0; c < 4; ++c)
        CHECK(samePlane(four, 0, c, grey, 0, 0));
    // Clear edges: neighbouring pixels that differ by a lot exist in both directions.
    double dx = 0, dy = 0;
    for (int64_t y = 0; y + 1 < 40; ++y)
        for (int64_t x = 0; x + 1 < 60; ++x) {
            dx = std::max(dx, double(std::abs(grey.at(0, 0, y, x + 1) - grey.at(0, 0, y, x))));
            dy = std::max(dy, double(std::abs(grey.at(0, 0, y + 1, x) - grey.at(0, 0, y, x))));
        }
    CHECK(dx > 0.4);
    CHECK(dy > 0.4);

    const Tensor digits = makeSampleInput("digit", 3, 3, 28, 28);
    CHECK(samePlane(digits, 0, 0, digits, 0, 2));
    CHECK(samePlane(digits, 0, 1, digits, 2, 1));
}

TEST_CASE("input: unknown samples and impossible sizes are InputErrors", "[input]")
{
    CHECK(sampleNames() == std::vector<std::string> { "digit", "edges" });
    CHECK_THROWS_WITH(
        makeSampleInput("cat", 1, 1, 8, 8), Contains("unknown sample \"cat\"") && Contains("digit, edges"));
    CHECK_THROWS_AS(makeSampleInput("digit", 1, 1, 0, 8), InputError);
    CHECK_THROWS_WITH(makeSampleInput("digit", int64_t(1) << 40, 1, int64_t(1) << 20, 8), Contains("overflows"));
}

TEST_CASE("input: a PNG decodes to RGB or luminance between 0 and 1", "[input]")
{
    // 2x1: pure red, then (10, 200, 255)
    const std::string bytes = png(2, 1, 3, { 255, 0, 0, 10, 200, 255 });
    const Tensor rgb = decodeImageInput(bytes, "two.png", 2, 3, 1, 2);
    REQUIRE(rgb.shape() == Shape::nchw(2, 3, 1, 2));
    CHECK(rgb.at(0, 0, 0, 0) == 1.0f);
    CHECK(rgb.at(0, 1, 0, 0) == 0.0f);
    CHECK(rgb.at(0, 0, 0, 1) == Approx(10 / 255.0f));
    CHECK(rgb.at(0, 1, 0, 1) == Approx(200 / 255.0f));
    CHECK(rgb.at(1, 2, 0, 1) == 1.0f);
    const Tensor grey = decodeImageInput(bytes, "two.png", 1, 1, 1, 2);
    CHECK(grey.at(0, 0, 0, 0) == Approx(0.299f));
    CHECK(grey.at(0, 0, 0, 1) == Approx((0.299f * 10 + 0.587f * 200 + 0.114f * 255) / 255.0f));
    // A grey PNG gives the same value in every colour channel.
    const Tensor fromGrey = decodeImageInput(png(1, 1, 1, { 51 }), "g.png", 1, 3, 1, 1);
    for (int64_t c = 0; c < 3; ++c)
        CHECK(fromGrey.at(0, c, 0, 0) == Approx(0.2f));
}

TEST_CASE("input: images are resized to the network's input size", "[input]")
{
    // A flat colour stays that colour at any size; a left/right split stays split.
    std::vector<unsigned char> pixels;
    for (int y = 0; y < 16; ++y)
        for (int x = 0; x < 16; ++x)
            pixels.push_back(x < 8 ? 0 : 255);
    const std::string split = png(16, 16, 1, pixels);
    for (auto [h, w] : { std::pair<int64_t, int64_t> { 8, 8 }, { 32, 64 }, { 5, 3 } }) {
        CAPTURE(h, w);
        const Tensor t = decodeImageInput(split, "split.png", 1, 1, h, w);
        REQUIRE(t.shape() == Shape::nchw(1, 1, h, w));
        CHECK(minOf(t) >= 0.0f);
        CHECK(maxOf(t) <= 1.0f);
        CHECK(t.at(0, 0, 0, 0) < 0.05f);
        CHECK(t.at(0, 0, h - 1, w - 1) > 0.95f);
    }
    const Tensor flat = decodeImageInput(png(3, 3, 3, std::vector<unsigned char>(27, 128)), "flat.png", 1, 3, 10, 7);
    CHECK(minOf(flat) == Approx(128 / 255.0f));
    CHECK(maxOf(flat) == Approx(128 / 255.0f));
    // 9 columns to 7: stb_image_resize's coefficient check used to abort a debug build here (found by the fuzzer).
    for (int64_t w : { 7, 5, 3 }) {
        const Tensor nine = decodeImageInput(png(9, 4, 1, std::vector<unsigned char>(36, 200)), "nine.png", 1, 1, 9, w);
        CHECK(minOf(nine) == Approx(200 / 255.0f));
        CHECK(maxOf(nine) == Approx(200 / 255.0f));
    }
}

TEST_CASE("input: a file that is not an image is an InputError naming it", "[input]")
{
    CHECK_THROWS_WITH(decodeImageInput("definitely not a png", "bad.png", 1, 1, 4, 4),
        Contains("bad.png") && Contains("cannot decode"));
    std::string truncated = png(4, 4, 3, std::vector<unsigned char>(48, 9));
    truncated.resize(truncated.size() / 2);
    CHECK_THROWS_WITH(decodeImageInput(truncated, "half.png", 1, 1, 4, 4), Contains("half.png"));
    CHECK_THROWS_WITH(loadImageInput("/nonexistent/pic.png", 1, 1, 4, 4), Contains("cannot read /nonexistent/pic.png"));
}

TEST_CASE("input: loadInput resolves every source kind against the network's folder", "[input]")
{
    test::TempDir dir;
    writeFileAtomically(dir.path / "pic.png", png(2, 2, 3, { 255, 0, 0, 0, 255, 0, 0, 0, 255, 255, 255, 255 }));

    InputSpec in { 2, 3, 2, 2, false, "pic.png" };
    const Tensor img = loadInput(in, dir.path);
    CHECK(img.shape() == Shape::nchw(2, 3, 2, 2));
    CHECK(img.at(1, 1, 0, 1) == 1.0f);
    CHECK(img.at(1, 0, 0, 1) == 0.0f);
    in.source = (dir.path / "pic.png").string(); // absolute paths are used as they are
    CHECK(loadInput(in, "/elsewhere").at(0, 2, 1, 0) == 1.0f);

    in = InputSpec { 1, 1, 28, 28, false, "sample:digit" };
    CHECK(samePlane(loadInput(in, {}), 0, 0, makeSampleInput("digit", 1, 1, 28, 28), 0, 0));

    in.source = "random:3";
    const Tensor r3 = loadInput(in, {});
    CHECK(minOf(r3) >= 0.0f);
    CHECK(maxOf(r3) < 1.0f);
    CHECK(meanOf(r3) == Approx(0.5).margin(0.06));
    CHECK(samePlane(r3, 0, 0, loadInput(in, {}), 0, 0));
    in.source = "random";
    CHECK_FALSE(samePlane(r3, 0, 0, loadInput(in, {}), 0, 0));
    in.source = "random:1";
    CHECK(samePlane(loadInput({ 1, 1, 28, 28, false, "random" }, {}), 0, 0, loadInput(in, {}), 0, 0));

    in.source = "notes.txt";
    CHECK_THROWS_WITH(loadInput(in, dir.path), Contains("notes.txt") && Contains("unknown input source"));
    in.source = "missing.png";
    CHECK_THROWS_WITH(loadInput(in, dir.path), Contains("cannot read") && Contains("missing.png"));
    InputSpec flatSample { 1, 10, 1, 1, true, "sample:edges" };
    CHECK_THROWS_WITH(loadInput(flatSample, {}), Contains("needs an image input"));
}

TEST_CASE("input: .npy inputs must match the input description", "[input]")
{
    test::TempDir dir;
    std::vector<float> v(2 * 3 * 4 * 5);
    for (size_t i = 0; i < v.size(); ++i)
        v[i] = float(i) / 1000.0f;
    writeNpy(dir.path / "nchw.npy", { 2, 3, 4, 5 }, v.data());
    writeNpy(dir.path / "chw.npy", { 3, 4, 5 }, v.data());
    writeNpy(dir.path / "flat.npy", { 2, 30 }, v.data());

    const Tensor a = loadInput({ 2, 3, 4, 5, false, "nchw.npy" }, dir.path);
    REQUIRE(a.shape() == Shape::nchw(2, 3, 4, 5));
    CHECK(std::equal(v.begin(), v.end(), a.data()));

    // One picture [C, H, W] is repeated over the batch, as an image is.
    const Tensor b = loadInput({ 2, 3, 4, 5, false, "chw.npy" }, dir.path);
    CHECK(samePlane(b, 0, 2, b, 1, 2));
    CHECK(b.at(1, 2, 3, 4) == v[59]);

    const Tensor f = loadInput({ 2, 30, 1, 1, true, "flat.npy" }, dir.path);
    CHECK(f.shape() == Shape::features(2, 30));
    CHECK(f.data()[59] == v[59]);

    CHECK_THROWS_WITH(loadInput({ 1, 3, 4, 5, false, "nchw.npy" }, dir.path),
        Contains("nchw.npy") && Contains("[2, 3, 4, 5]") && Contains("[1, 3, 4, 5]"));
    CHECK_THROWS_WITH(
        loadInput({ 2, 3, 5, 4, false, "chw.npy" }, dir.path), Contains("[3, 4, 5]") && Contains("[2, 3, 5, 4]"));
    CHECK_THROWS_WITH(
        loadInput({ 2, 60, 1, 1, true, "flat.npy" }, dir.path), Contains("[2, 30]") && Contains("[2, 60]"));
    CHECK_THROWS_WITH(loadInput({ 2, 30, 1, 1, true, "nchw.npy" }, dir.path), Contains("[2, 3, 4, 5]"));
}
