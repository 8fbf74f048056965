// channel_shuffle, slice and transpose on the CPU: both are copies of contiguous runs, so direct:: and fast:: share one
// loop (fast splits it across the OpenMP team). A tensor's memory is PyTorch's contiguous layout, so an axis splits it
// into outer × size × inner runs (compute/shape.h dims()).
#include "compute/cpu/cpu_ops.h"

#include "compute/cpu_threads.h"
#include "compute/permutation.h"

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
    // out[...] = in[...] through the permutation. Where the input's innermost axis stays last, rows are copied whole;
    // otherwise the two axes that trade places (the input's innermost, P, and the output's last, L) are transposed
    // in 32 × 32 tiles, so that both the reads along P and the writes along L stay within a few cache lines, and
    // the tiles are spread over the OpenMP team.
    void transposeImpl(const Tensor& in, const std::vector<int64_t>& perm, Tensor& out, bool parallel)
    {
        const SimplePermutation p = simplifyPermutation(in.shape().dims(), perm);
        const size_t rank = p.out.size(), L = rank - 1;
        const float* x = in.data();
        float* y = out.data();
        const int64_t total = out.numel();
        std::vector<int64_t> outStride(rank, 1);
        for (size_t a = rank - 1; a > 0; --a)
            outStride[a - 1] = outStride[a] * p.out[a];
        if (p.stride[L] == 1) { // contiguous rows of p.out[L]
            const int64_t last = p.out[L], rows = last > 0 ? total / last : 0;
#pragma omp parallel for schedule(static) if (parallel && total > 65536)
            for (int64_t r = 0; r < rows; ++r) {
                int64_t offset = 0, rest = r;
                for (size_t a = L; a-- > 0;) {
                    offset += (rest % p.out[a]) * p.stride[a];
                    rest /= p.out[a];
                }
                std::memcpy(y + r * last, x + offset, size_t(last) * sizeof(float));
            }
            return;
        }
        const size_t P = p.innermost();
        constexpr int64_t kTile = 32;
        const int64_t sizeP = p.out[P], sizeL = p.out[L], strideL = p.stride[L], outStrideP = outStride[P];
        const int64_t tilesP = (sizeP + kTile - 1) / kTile, tilesL = (sizeL + kTile - 1) / kTile;
        const int64_t outer = total / (sizeP * sizeL), units = outer * tilesP * tilesL;
#pragma omp parallel for schedule(static) if (parallel && total > 65536)
        for (int64_t u = 0; u < units; ++u) {
            const int64_t tl = u % tilesL, tp = (u / tilesL) % tilesP;
            int64_t rest = u / (tilesL * tilesP), src = 0, dst = 0;
            for (size_t a = L; a-- > 0;) { // the other axes' indices, innermost first
                if (a == P)
                    continue;
                src += (rest % p.out[a]) * p.stride[a];
                dst += (rest % p.out[a]) * outStride[a];
                rest /= p.out[a];
            }
            const int64_t p0 = tp * kTile, p1 = std::min(sizeP, p0 + kTile);
            const int64_t l0 = tl * kTile, l1 = std::min(sizeL, l0 + kTile);
            for (int64_t i = p0; i < p1; ++i) {
                float* d = y + dst + i * outStrideP;
                const float* s = x + src + i;
                for (int64_t j = l0; j < l1; ++j)
                    d[j] = s[j * strideL];
            }
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
