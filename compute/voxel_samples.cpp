#include "compute/voxel_samples.h"

#include "compute/checked_math.h"
#include "compute/error.h"
#include "compute/random.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>

namespace convscope {

namespace {

    using Point = std::array<double, 3>; // x (W, left → right), y (H, bottom → top), z (D, front → back)

    struct Box {
        Point lo, hi;
        bool contains(const Point& p) const
        {
            for (int a = 0; a < 3; ++a)
                if (p[size_t(a)] < lo[size_t(a)] || p[size_t(a)] > hi[size_t(a)])
                    return false;
            return true;
        }
    };

    // The chair: seat, back rest along the back edge, four legs under the seat's corners. `leg` and `back` vary the
    // proportions of the variants.
    std::vector<Box> chairBoxes(double leg, double back)
    {
        const double seatLow = -0.1, seatHigh = 0.06, half = 0.6, post = 0.14;
        std::vector<Box> boxes = {
            { { -half, seatLow, -half }, { half, seatHigh, half } }, // seat
            { { -half, seatHigh, half - post }, { half, seatHigh + back, half } }, // back rest
        };
        for (double x : { -half, half - post })
            for (double z : { -half, half - post })
                boxes.push_back({ { x, seatLow - leg, z }, { x + post, seatLow, z + post } });
        return boxes;
    }

} // namespace

std::vector<std::string> voxelSampleNames()
{
    return { "voxels:sphere", "voxels:torus", "voxels:cube", "voxels:chair" };
}

bool isVoxelSample(const std::string& name)
{
    const auto names = voxelSampleNames();
    return std::find(names.begin(), names.end(), name) != names.end();
}

Tensor makeVoxelSample(const std::string& name, int64_t batch, int64_t channels, int64_t depth, int64_t height,
    int64_t width, uint64_t variant)
{
    const std::string what = "sample:" + name;
    if (!isVoxelSample(name))
        throw InputError(
            what + ": unknown voxel sample (known: voxels:sphere, voxels:torus, voxels:cube, voxels:chair)");
    if (batch < 1 || channels < 1 || depth < 1 || height < 1 || width < 1)
        throw InputError(what + ": the volume size must be positive");
    checkedProduct({ batch, channels, depth, height, width, int64_t(sizeof(float)) }, what);

    double scale = 1.0, leg = 0.72, back = 0.78;
    Point shift { 0, 0, 0 };
    if (variant > 0) {
        Random rng(variant);
        scale = rng.uniform(0.8, 1.1);
        for (double& s : shift)
            s = rng.uniform(-0.12, 0.12);
        leg = rng.uniform(0.45, 0.8);
        back = rng.uniform(0.4, 0.85);
    }
    const std::vector<Box> chair = chairBoxes(leg, back);
    std::function<bool(const Point&)> inside;
    if (name == "voxels:sphere")
        inside = [](const Point& p) { return p[0] * p[0] + p[1] * p[1] + p[2] * p[2] <= 0.7 * 0.7; };
    else if (name == "voxels:torus")
        inside = [](const Point& p) {
            const double ring = std::sqrt(p[0] * p[0] + p[1] * p[1]) - 0.55;
            return ring * ring + p[2] * p[2] <= 0.22 * 0.22;
        };
    else if (name == "voxels:cube")
        inside = [](const Point& p) { return std::max({ std::abs(p[0]), std::abs(p[1]), std::abs(p[2]) }) <= 0.55; };
    else
        inside = [&chair](const Point& p) {
            return std::any_of(chair.begin(), chair.end(), [&](const Box& b) { return b.contains(p); });
        };

    // One volume, then copied to every item and channel. Voxel centres at (i + 0.5) / n on [−1, 1].
    const auto centre = [](int64_t i, int64_t n) { return (double(i) + 0.5) / double(n) * 2.0 - 1.0; };
    Tensor t(Shape::ncdhw(batch, channels, depth, height, width));
    const int64_t volume = depth * height * width;
    for (int64_t d = 0; d < depth; ++d)
        for (int64_t h = 0; h < height; ++h)
            for (int64_t w = 0; w < width; ++w) {
                const Point p { (centre(w, width) - shift[0]) / scale, (-centre(h, height) - shift[1]) / scale,
                    (centre(d, depth) - shift[2]) / scale };
                t.data()[(d * height + h) * width + w] = inside(p) ? 1.0f : 0.0f;
            }
    for (int64_t k = 1; k < batch * channels; ++k)
        std::copy(t.data(), t.data() + volume, t.data() + k * volume);
    return t;
}

} // namespace convscope
