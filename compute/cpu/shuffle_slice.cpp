// channel_shuffle, slice and transpose on the CPU: both are copies of contiguous runs, so direct:: and fast:: share one
// loop (fast splits it across the OpenMP team). A tensor's memory is PyTorch's contiguous layout, so an axis splits it
// into outer × size × inner runs (compute/shape.h dims()).
#include "compute/cpu/cpu_ops.h"

#include "compute/cpu_threads.h"

#include <algorithm>
#include <cstring>

namespace convscope::cpu {

namespace {
    // outer: the product of the axes before `dim`; inner: of those after it (dims as Shape::dims() lists them).
    void splitAt(const Shape& s, int64_t dim, int64_t& outer, int64_t& size, int64_t& inner)
    {
        const std::vector<int64_t> d = s.dims();
        outer = 1;
        inner = 1;
        for (int64_t i = 0; i < dim; ++i)
            outer *= d[size_t(i)];
        size = d[size_t(dim)];
        for (size_t i = size_t(dim) + 1; i < d.size(); ++i)
            inner *= d[i];
    }

    void shuffleImpl(const Tensor& in, const ChannelShuffle& spec, Tensor& out, bool parallel)
    {
        int64_t batch = 0, channels = 0, plane = 0;
        splitAt(in.shape(), 1, batch, channels, plane);
        const int64_t g = spec.groups, per = channels / g;
        const float* x = in.data();
        float* y = out.data();
        // Output channel o = j·g + i reads input channel i·per + j: one plane copied per output channel.
#pragma omp parallel for collapse(2) schedule(static) if (parallel && batch * channels * plane > 65536)
        for (int64_t n = 0; n < batch; ++n)
            for (int64_t o = 0; o < channels; ++o) {
                const int64_t i = o % g, j = o / g;
                std::memcpy(y + (n * channels + o) * plane, x + (n * channels + i * per + j) * plane,
                    size_t(plane) * sizeof(float));
            }
    }

    void sliceImpl(const Tensor& in, const Slice& spec, Tensor& out, bool parallel)
    {
        int64_t outer = 0, size = 0, inner = 0;
        splitAt(in.shape(), spec.dim, outer, size, inner);
        const int64_t run = (spec.end - spec.start) * inner; // one contiguous run per outer index
        const float* x = in.data() + spec.start * inner;
        float* y = out.data();
#pragma omp parallel for schedule(static) if (parallel && outer * run > 65536)
        for (int64_t o = 0; o < outer; ++o)
            std::memcpy(y + o * run, x + o * size * inner, size_t(run) * sizeof(float));
    }
    // y = x.permute(perm): output element at index (i_0, ..., i_r-1) is input element (j with j[perm[a]] = i_a).
    // The last output axis is walked innermost with the input's stride of that axis; parallel over the rows.
    void transposeImpl(const Tensor& in, const std::vector<int64_t>& perm, Tensor& out, bool parallel)
    {
        const std::vector<int64_t> id = in.shape().dims();
        const size_t rank = id.size();
        std::vector<int64_t> inStride(rank, 1);
        for (size_t a = rank - 1; a > 0; --a)
            inStride[a - 1] = inStride[a] * id[a];
        std::vector<int64_t> od(rank), stride(rank);
        for (size_t a = 0; a < rank; ++a) {
            od[a] = id[size_t(perm[a])];
            stride[a] = inStride[size_t(perm[a])];
        }
        const int64_t last = od[rank - 1], lastStride = stride[rank - 1];
        const int64_t rows = last > 0 ? out.numel() / last : 0;
        const float* x = in.data();
        float* y = out.data();
#pragma omp parallel for schedule(static) if (parallel && out.numel() > 65536)
        for (int64_t r = 0; r < rows; ++r) {
            int64_t offset = 0, rest = r;
            for (size_t a = rank - 1; a-- > 0;) { // the row's index along each output axis but the last
                offset += (rest % od[a]) * stride[a];
                rest /= od[a];
            }
            float* dst = y + r * last;
            for (int64_t k = 0; k < last; ++k)
                dst[k] = x[offset + k * lastStride];
        }
    }
} // namespace

void direct::transpose(const Tensor& in, const std::vector<int64_t>& dims, Tensor& out)
{
    transposeImpl(in, dims, out, false);
}
void fast::transpose(const Tensor& in, const std::vector<int64_t>& dims, Tensor& out)
{
    transposeImpl(in, dims, out, true);
}

void direct::channelShuffle(const Tensor& in, const ChannelShuffle& spec, Tensor& out)
{
    shuffleImpl(in, spec, out, false);
}
void fast::channelShuffle(const Tensor& in, const ChannelShuffle& spec, Tensor& out)
{
    shuffleImpl(in, spec, out, true);
}
void direct::slice(const Tensor& in, const Slice& spec, Tensor& out) { sliceImpl(in, spec, out, false); }
void fast::slice(const Tensor& in, const Slice& spec, Tensor& out) { sliceImpl(in, spec, out, true); }

} // namespace convscope::cpu
