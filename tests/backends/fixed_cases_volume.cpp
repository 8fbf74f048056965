// The fixed cases of the 3-D kinds for the cross-backend test (fixed_cases.cpp names every kind; these are its
// conv3d, conv_transpose3d, maxpool3d, avgpool3d, global_avgpool3d and batchnorm3d cases).
#include "tests/backends/backend_cases.h"

#include "compute/layer_kinds.h"

namespace convscope::test {

namespace {
    using Case = NetworkCase;

    // A small network under construction (test_support.h): the fixed cases' input salt and weight seeds.
    struct Builder : NetworkBuilder {
        explicit Builder(const std::string& name, int64_t n, int64_t c, int64_t h, int64_t w)
            : NetworkBuilder(name, n, c, h, w, false, 7, 11)
        {
        }
    };
} // namespace

// The cases of the 3-D kinds (volumes): asymmetric padding, dilation, groups, odd sizes that differ along D, H, W.
std::vector<Case> fixedVolumeCasesFor(const LayerSpec& kind)
{
    const std::string type = layerTypeName(kind);
    if (std::holds_alternative<Conv3d>(kind))
        return {
            Builder(type, 2, 3, 6, 7)
                .depth(5)
                .add("c", test::conv3dSpec(4, { 3, 3, 3 }, { 1, 1, 1 }, test::explicitPadding3d(1, 0, 2, 1, 0, 2)))
                .done("asymmetric padding"),
            Builder(type, 1, 4, 8, 9)
                .depth(7)
                .add("c",
                    test::conv3dSpec(
                        6, { 3, 2, 3 }, { 2, 1, 2 }, test::explicitPadding3d(2, 2, 1, 1, 2, 2), { 2, 2, 1 }, 2))
                .done("strides 2,1,2 dilation 2,2,1 groups 2"),
            Builder(type, 3, 8, 3, 4).depth(5).add("c", test::conv3dSpec(3, { 1, 1, 1 })).done("1×1×1"),
            Builder(type, 2, 1, 12, 11)
                .depth(13)
                .add("c", test::conv3dSpec(8, { 5, 5, 5 }, { 2, 2, 4 }, { Padding3d::Mode::Same }))
                .done("5×5×5 same, strides 2,2,4 (the lecture's encoder)"),
            Builder(type, 2, 8, 6, 5)
                .depth(4)
                .add("c", test::conv3dSpec(8, { 3, 3, 3 }, { 1, 2, 1 }, Padding3d::symmetric(1, 1, 1), { 1, 1, 1 }, 8))
                .done("depthwise 3×3×3, 8 channels"),
        };
    if (std::holds_alternative<ConvTranspose3d>(kind)) {
        ConvTranspose3d a;
        a.out_channels = 3;
        a.stride = { 2, 2, 2 };
        a.padding = Padding3d::symmetric(1, 1, 1);
        a.output_padding = { 1, 1, 1 };
        ConvTranspose3d b;
        b.out_channels = 4;
        b.kernel_size = { 4, 4, 4 };
        b.stride = { 2, 2, 2 };
        b.padding = Padding3d::symmetric(1, 1, 1);
        b.groups = 2;
        ConvTranspose3d c;
        c.out_channels = 2;
        c.kernel_size = { 2, 3, 3 };
        c.stride = { 3, 1, 2 };
        c.padding = test::explicitPadding3d(1, 0, 0, 2, 1, 1);
        c.output_padding = { 2, 0, 1 };
        c.dilation = { 1, 2, 2 };
        // The autoencoder decoder's two layers that cuda.implicit_gemm runs on its phase-tiled kernel: 64 phases of 16
        // output channels, and one output channel.
        ConvTranspose3d d;
        d.out_channels = 16;
        d.kernel_size = { 5, 5, 5 };
        d.stride = { 4, 4, 4 };
        d.padding = test::explicitPadding3d(0, 1, 0, 1, 0, 1);
        ConvTranspose3d e = d;
        e.out_channels = 1;
        e.stride = { 2, 2, 2 };
        e.padding = test::explicitPadding3d(1, 2, 1, 2, 1, 2);
        return { Builder(type, 2, 4, 5, 6).depth(3).add("t", a).done("stride 2 output_padding 1"),
            Builder(type, 2, 8, 2, 2).depth(2).add("t", d).done("5³ stride 4, 16 outputs (the decoder's first layer)"),
            Builder(type, 1, 8, 4, 3).depth(3).add("t", e).done("5³ stride 2, one output (the decoder's last layer)"),
            Builder(type, 1, 4, 3, 4).depth(3).add("t", b).done("k4 stride 2 groups 2"),
            Builder(type, 2, 3, 4, 5).depth(3).add("t", c).done("strides 3,1,2 dilation 1,2,2 asymmetric crop") };
    }
    if (std::holds_alternative<MaxPool3d>(kind)) {
        MaxPool3d a;
        a.kernel_size = { 3, 3, 3 };
        a.stride = Triple { 2, 2, 2 };
        a.padding = Padding3d::symmetric(1, 1, 1);
        a.ceil_mode = true;
        MaxPool3d b;
        b.kernel_size = { 2, 3, 2 };
        b.dilation = { 2, 1, 2 };
        return { Builder(type, 2, 3, 8, 7).depth(9).spread3("s", 3).add("p", a).done("k3 s2 pad 1 ceil_mode"),
            Builder(type, 1, 2, 9, 8).depth(7).spread3("s", 2).add("p", b).done("dilation 2,1,2") };
    }
    if (std::holds_alternative<AvgPool3d>(kind)) {
        AvgPool3d a;
        a.kernel_size = { 3, 3, 3 };
        a.stride = Triple { 2, 2, 2 };
        a.padding = Padding3d::symmetric(1, 1, 1);
        a.count_include_pad = false;
        a.ceil_mode = true;
        AvgPool3d b;
        b.divisor_override = 3;
        AvgPool3d c;
        c.kernel_size = { 3, 2, 3 };
        c.stride = Triple { 2, 2, 2 };
        c.padding = Padding3d::symmetric(1, 1, 1);
        c.ceil_mode = true;
        return { Builder(type, 2, 3, 8, 7).depth(9).add("p", a).done("k3 s2 pad 1 ceil without the padding"),
            Builder(type, 1, 2, 6, 5).depth(7).add("p", b).done("divisor_override 3"),
            Builder(type, 1, 2, 6, 7).depth(8).add("p", c).done("ceil_mode counting the padding") };
    }
    if (std::holds_alternative<GlobalAvgPool3d>(kind))
        return { Builder(type, 3, 5, 7, 5).depth(6).add("g", kind).done("6×7×5") };
    if (std::holds_alternative<BatchNorm3d>(kind)) {
        BatchNorm3d plain;
        plain.affine = false;
        return { Builder(type, 2, 3, 6, 7).depth(5).spread3("s", 5).add("bn", kind).done("random statistics"),
            Builder(type, 1, 3, 5, 5).depth(4).add("bn", plain).done("affine false") };
    }
    return {};
}

} // namespace convscope::test
