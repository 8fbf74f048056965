#include "gui/views/volume_slices.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace convscope::gui {

QString axisName(VolumeAxis axis)
{
    switch (axis) {
    case VolumeAxis::D:
        return QStringLiteral("D");
    case VolumeAxis::H:
        return QStringLiteral("H");
    case VolumeAxis::W:
        return QStringLiteral("W");
    }
    return {};
}

namespace {
    std::pair<float, float> volumeFiniteRange(const float* p, int64_t count)
    {
        float lo = std::numeric_limits<float>::infinity(), hi = -lo;
        for (int64_t i = 0; i < count; ++i) {
            if (std::isfinite(p[i])) {
                lo = std::min(lo, p[i]);
                hi = std::max(hi, p[i]);
            }
        }
        if (lo > hi)
            lo = hi = 0;
        return { lo, hi };
    }

    // The plane of a cut along `axis`: its rows and columns, and the strides that walk them in the volume.
    struct CutGeometry {
        int64_t rows, cols, rowStride, colStride, axisStride;
    };

    CutGeometry cutGeometry(const VolumeSet& v, VolumeAxis axis)
    {
        const int64_t sw = 1, sh = v.width, sd = v.height * v.width;
        switch (axis) {
        case VolumeAxis::D:
            return { v.height, v.width, sh, sw, sd };
        case VolumeAxis::H:
            return { v.depth, v.width, sd, sw, sh };
        case VolumeAxis::W:
            break;
        }
        return { v.depth, v.height, sd, sh, sw };
    }

    // Channels to show and the colour range each carries.
    void prepareCut(const VolumeSet& v, int channel, bool sharedRange, PlaneSet& p, std::vector<int64_t>& channels)
    {
        if (channel >= 0 && channel < v.channels)
            channels = { channel };
        else
            for (int64_t c = 0; c < v.channels; ++c)
                channels.push_back(c);
        const auto all = sharedRange ? v.range() : std::pair<float, float> {};
        for (int64_t c : channels) {
            p.channelIds.push_back(int(c));
            p.ranges.push_back(sharedRange ? all : v.channelRange(c));
        }
        p.channels = int64_t(channels.size());
    }
} // namespace

std::pair<float, float> VolumeSet::channelRange(int64_t c) const
{
    const int64_t count = depth * height * width;
    return volumeFiniteRange(values.data() + c * count, count);
}

std::pair<float, float> VolumeSet::range() const { return volumeFiniteRange(values.data(), int64_t(values.size())); }

VolumeSet volumeOf(const Tensor& t, int64_t n)
{
    VolumeSet v;
    const Shape& s = t.shape();
    if (!s.isVolume() || t.empty() || n < 0 || n >= s.n)
        return v;
    v.channels = s.c;
    v.depth = s.d;
    v.height = s.h;
    v.width = s.w;
    const int64_t count = s.c * s.d * s.h * s.w;
    v.values.assign(t.data() + n * count, t.data() + (n + 1) * count);
    return v;
}

PlaneSet sliceOf(const VolumeSet& v, VolumeAxis axis, int64_t index, bool sharedRange, int channel)
{
    PlaneSet p;
    if (v.empty() || index < 0 || index >= v.length(axis))
        return p;
    std::vector<int64_t> channels;
    prepareCut(v, channel, sharedRange, p, channels);
    const CutGeometry g = cutGeometry(v, axis);
    p.height = g.rows;
    p.width = g.cols;
    p.values.resize(size_t(p.channels * g.rows * g.cols));
    const int64_t volume = v.depth * v.height * v.width;
    float* out = p.values.data();
    for (int64_t c : channels) {
        const float* base = v.values.data() + c * volume + index * g.axisStride;
        for (int64_t r = 0; r < g.rows; ++r)
            for (int64_t col = 0; col < g.cols; ++col)
                *out++ = base[r * g.rowStride + col * g.colStride];
    }
    return p;
}

PlaneSet maxProjection(const VolumeSet& v, VolumeAxis axis, bool sharedRange)
{
    PlaneSet p;
    if (v.empty())
        return p;
    std::vector<int64_t> channels;
    prepareCut(v, -1, sharedRange, p, channels);
    const CutGeometry g = cutGeometry(v, axis);
    const int64_t length = v.length(axis), volume = v.depth * v.height * v.width;
    p.height = g.rows;
    p.width = g.cols;
    p.values.resize(size_t(p.channels * g.rows * g.cols));
    float* out = p.values.data();
    for (int64_t c : channels) {
        const float* base = v.values.data() + c * volume;
        for (int64_t r = 0; r < g.rows; ++r) {
            for (int64_t col = 0; col < g.cols; ++col) {
                const float* ray = base + r * g.rowStride + col * g.colStride;
                float m = -std::numeric_limits<float>::infinity();
                for (int64_t i = 0; i < length; ++i) {
                    const float x = ray[i * g.axisStride];
                    if (std::isnan(x)) {
                        m = x;
                        break;
                    }
                    m = std::max(m, x);
                }
                *out++ = m;
            }
        }
    }
    return p;
}

int64_t argmaxAlong(const VolumeSet& v, int64_t c, VolumeAxis axis, int row, int col)
{
    const CutGeometry g = cutGeometry(v, axis);
    if (v.empty() || c < 0 || c >= v.channels || row < 0 || row >= g.rows || col < 0 || col >= g.cols)
        return 0;
    const float* ray = v.values.data() + c * v.depth * v.height * v.width + row * g.rowStride + col * g.colStride;
    int64_t best = 0;
    for (int64_t i = 0; i < v.length(axis); ++i) {
        const float x = ray[i * g.axisStride];
        if (std::isnan(x))
            return i; // the projection shows the NaN: point at it
        if (x > ray[best * g.axisStride])
            best = i;
    }
    return best;
}

std::array<int64_t, 3> voxelOf(VolumeAxis axis, int64_t index, int row, int col)
{
    switch (axis) {
    case VolumeAxis::D:
        return { index, row, col };
    case VolumeAxis::H:
        return { row, index, col };
    case VolumeAxis::W:
        break;
    }
    return { row, col, index };
}

} // namespace convscope::gui
