#include "kernels/cudnn/conv_geometry.h"

#include "compute/error.h"

#include <string>

namespace convscope::cudnn {

int toInt(int64_t v, const char* what)
{
    if (v < 0 || v > 0x7fffffff)
        throw UnsupportedError(
            std::string("cudnn: ") + what + " " + std::to_string(v) + " does not fit cuDNN's 32-bit descriptor fields");
    return static_cast<int>(v);
}

namespace {
    // What a message calls each axis's input, output and kernel extent; a 2-D layer uses the last two rows.
    constexpr const char* kNames[3][3] = {
        { "depth", "output depth", "kernel depth" },
        { "height", "output height", "kernel height" },
        { "width", "output width", "kernel width" },
    };

    // One reader for every rank and kind: the checks run in the order the messages were always given in.
    template <size_t N, class Spec> ConvGeometry<N> read(const Spec& spec, const LayerShape& s)
    {
        const int64_t in[3] = { s.in.d, s.in.h, s.in.w }, out[3] = { s.out.d, s.out.h, s.out.w };
        constexpr size_t first = 3 - N; // the axes a rank-N tensor has
        ConvGeometry<N> g {};
        g.n = toInt(s.in.n, "batch");
        g.cin = toInt(s.in.c, "channels");
        for (size_t a = 0; a < N; ++a)
            g.in[a] = toInt(in[first + a], kNames[first + a][0]);
        g.cout = toInt(s.out.c, "out_channels");
        for (size_t a = 0; a < N; ++a)
            g.out[a] = toInt(out[first + a], kNames[first + a][1]);
        for (size_t a = 0; a < N; ++a)
            g.kernel[a] = toInt(spec.kernel_size[a], kNames[first + a][2]);
        for (size_t a = 0; a < N; ++a)
            g.stride[a] = toInt(spec.stride[a], "stride");
        for (size_t a = 0; a < N; ++a)
            g.dilation[a] = toInt(spec.dilation[a], "dilation");
        g.groups = toInt(spec.groups, "groups");
        return g;
    }
} // namespace

ConvGeometry<2> convGeometry(const Conv2d& spec, const LayerShape& shape) { return read<2>(spec, shape); }
ConvGeometry<2> convGeometry(const ConvTranspose2d& spec, const LayerShape& shape) { return read<2>(spec, shape); }
ConvGeometry<3> convGeometry(const Conv3d& spec, const LayerShape& shape) { return read<3>(spec, shape); }
ConvGeometry<3> convGeometry(const ConvTranspose3d& spec, const LayerShape& shape) { return read<3>(spec, shape); }

} // namespace convscope::cudnn
