#include "gui/views/tensor_slices.h"

#include <algorithm>
#include <cmath>

namespace convscope::gui {

namespace {
    struct TensorCut {
        std::vector<int64_t> dims, strides;
        int64_t base = 0; // the offset of the fixed axes' indices
        int64_t len(int axis) const { return axis >= 0 ? dims[size_t(axis)] : 1; }
        int64_t stride(int axis) const { return axis >= 0 ? strides[size_t(axis)] : 0; }
    };

    TensorCut cutOf(const Tensor& t, const OutputView& v, const std::vector<int64_t>& index)
    {
        TensorCut c;
        c.dims = t.shape().dims();
        c.strides.assign(c.dims.size(), 1);
        for (size_t i = c.dims.size(); i-- > 1;)
            c.strides[i - 1] = c.strides[i] * c.dims[i];
        for (size_t i = 0; i < c.dims.size(); ++i) {
            const int a = int(i);
            if (a == v.tiles || a == v.rows || a == v.cols || a == v.depth)
                continue;
            const int64_t at
                = i < index.size() ? std::clamp<int64_t>(index[i], 0, std::max<int64_t>(0, c.dims[i] - 1)) : 0;
            c.base += at * c.strides[i];
        }
        return c;
    }
} // namespace

PlaneSet mapsOf(
    const Tensor& t, const OutputView& v, const std::vector<int64_t>& index, int64_t firstTile, int64_t maxTiles)
{
    PlaneSet p;
    if (t.empty())
        return p;
    const TensorCut c = cutOf(t, v, index);
    const int64_t tiles = c.len(v.tiles);
    firstTile = std::clamp<int64_t>(firstTile, 0, std::max<int64_t>(0, tiles - 1));
    p.channels = std::min(tiles - firstTile, std::max<int64_t>(1, maxTiles));
    p.height = c.len(v.rows);
    p.width = c.len(v.cols);
    p.values.resize(size_t(p.channels * p.height * p.width));
    p.channelIds.resize(size_t(p.channels));
    const float* data = t.data();
    float* out = p.values.data();
    const int64_t rs = c.stride(v.rows), cs = c.stride(v.cols);
    for (int64_t k = 0; k < p.channels; ++k) {
        p.channelIds[size_t(k)] = int(firstTile + k);
        const float* tile = data + c.base + (firstTile + k) * c.stride(v.tiles);
        for (int64_t r = 0; r < p.height; ++r)
            for (int64_t col = 0; col < p.width; ++col)
                *out++ = tile[r * rs + col * cs];
    }
    return p;
}

HeatMapData heatMapOf(
    const Tensor& t, const Tensor* reference, const OutputView& v, const std::vector<int64_t>& index, int64_t maxSide)
{
    HeatMapData h;
    if (t.empty() || (reference && reference->shape() != t.shape()))
        return h;
    const TensorCut c = cutOf(t, v, index);
    h.fullRows = c.len(v.rows);
    h.fullCols = c.len(v.cols);
    maxSide = std::max<int64_t>(1, maxSide);
    h.rowStep = (h.fullRows + maxSide - 1) / maxSide;
    h.colStep = (h.fullCols + maxSide - 1) / maxSide;
    h.rows = (h.fullRows + h.rowStep - 1) / h.rowStep;
    h.cols = (h.fullCols + h.colStep - 1) / h.colStep;
    h.difference = reference != nullptr;
    h.values.assign(size_t(h.rows * h.cols), 0.f);
    std::vector<double> sums(size_t(h.cols));
    std::vector<int64_t> counts(size_t(h.cols));
    const float* a = t.data() + c.base;
    const float* b = reference ? reference->data() + c.base : nullptr;
    const int64_t rs = c.stride(v.rows), cs = c.stride(v.cols);
    for (int64_t cr = 0; cr < h.rows; ++cr) {
        std::fill(sums.begin(), sums.end(), 0.0);
        std::fill(counts.begin(), counts.end(), 0);
        for (int64_t r = cr * h.rowStep; r < std::min(h.fullRows, (cr + 1) * h.rowStep); ++r)
            for (int64_t col = 0; col < h.fullCols; ++col) {
                const int64_t off = r * rs + col * cs;
                const double x = b ? std::fabs(double(a[off]) - double(b[off])) : double(a[off]);
                sums[size_t(col / h.colStep)] += x;
                ++counts[size_t(col / h.colStep)];
            }
        for (int64_t cc = 0; cc < h.cols; ++cc)
            h.values[size_t(cr * h.cols + cc)] = float(sums[size_t(cc)] / double(counts[size_t(cc)]));
    }
    return h;
}

std::vector<float> barsOf(const Tensor& t, const Tensor* reference)
{
    if (t.shape().ndim() != 1 || (reference && reference->shape() != t.shape()))
        return {};
    std::vector<float> v(t.data(), t.data() + t.numel());
    if (reference)
        for (size_t i = 0; i < v.size(); ++i)
            v[i] = std::fabs(v[i] - reference->data()[i]);
    return v;
}

} // namespace convscope::gui
