#!/usr/bin/env python3
"""Models that upsample, through ConvScope's ONNX import, checked against onnxruntime (issue 30: the resize kind).

Exports torchvision's segmentation models (LRASPP and DeepLabV3 on MobileNetV3-Large, FCN on ResNet-50: seeded random
weights, weights=None and weights_backbone=None, no download) and two small models of our own — a U-Net whose
decoder upsamples bilinearly (align_corners=True, as the common U-Net code writes it) and an FPN / YOLO-style neck
that upsamples by nearest ×2 and concatenates — to ONNX (opset 17: Resize with sizes computed from Shape → Slice →
Concat, or constant scales), runs each in onnxruntime on a seeded input, then in `convscope-cli run` on every
selection asked for, and prints the relative L2 error of ConvScope's output against onnxruntime's. Goal: ≤ 1e-4.

PyTorch, torchvision and onnxruntime are developer tools here, never dependencies of ConvScope.

    python3 tools/segmentation_onnx_check.py --cli build/ci/bin/convscope-cli --out /tmp/seg --backends cpu.im2col_gemm
    python3 tools/segmentation_onnx_check.py --models-only --out models/        # export only (for the GPU machine)
    python3 tools/segmentation_onnx_check.py --cli ... --out models/ --reuse --backends cuda.implicit_gemm,cudnn.auto
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torchvision_onnx_check import add_common_arguments, check_models, randomize_batch_norm  # noqa: E402

MODELS = ["lraspp_mobilenet_v3_large", "deeplabv3_mobilenet_v3_large", "fcn_resnet50", "unet_bilinear", "fpn_nearest"]


def own_model(name):
    import torch
    from torch import nn

    def block(i, o):
        return nn.Sequential(nn.Conv2d(i, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU(inplace=True),
                             nn.Conv2d(o, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU(inplace=True))

    class UNet(nn.Module):  # two levels down, two up: bilinear ×2 (align_corners=True), concat with the skip
        def __init__(self):
            super().__init__()
            self.e1, self.e2, self.mid = block(3, 8), block(8, 16), block(16, 32)
            self.pool = nn.MaxPool2d(2)
            self.up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)
            self.d2, self.d1 = block(48, 16), block(24, 8)
            self.head = nn.Conv2d(8, 2, 1)

        def forward(self, x):
            a = self.e1(x)
            b = self.e2(self.pool(a))
            c = self.mid(self.pool(b))
            d = self.d2(torch.cat([b, self.up(c)], 1))
            return self.head(self.d1(torch.cat([a, self.up(d)], 1)))

    class Neck(nn.Module):  # a YOLO / FPN top-down path: nearest ×2, concat, 1×1 and 3×3 convolutions
        def __init__(self):
            super().__init__()
            self.s1 = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.BatchNorm2d(16), nn.SiLU())
            self.s2 = nn.Sequential(nn.Conv2d(16, 32, 3, 2, 1), nn.BatchNorm2d(32), nn.SiLU())
            self.s3 = nn.Sequential(nn.Conv2d(32, 64, 3, 2, 1), nn.BatchNorm2d(64), nn.SiLU())
            self.lat3, self.lat2 = nn.Conv2d(64, 32, 1), nn.Conv2d(64, 16, 1)
            self.up = nn.Upsample(scale_factor=2, mode="nearest")
            self.out2, self.out1 = nn.Conv2d(64, 32, 3, padding=1), nn.Conv2d(32, 8, 3, padding=1)

        def forward(self, x):
            p1 = self.s1(x)
            p2 = self.s2(p1)
            p3 = self.s3(p2)
            t2 = self.out2(torch.cat([self.up(self.lat3(p3)), p2], 1))
            t1 = self.out1(torch.cat([self.up(self.lat2(torch.cat([t2, p2], 1))), p1], 1))
            return t1 + nn.functional.interpolate(t1, scale_factor=1.0, mode="nearest")

    return {"unet_bilinear": UNet, "fpn_nearest": Neck}[name]()


def export(name, out, size, seed):
    import torch
    import torchvision

    torch.manual_seed(seed)
    if name in ("unet_bilinear", "fpn_nearest"):
        model = own_model(name)
    else:
        inner = getattr(torchvision.models.segmentation, name)(weights=None, weights_backbone=None)

        class Out(torch.nn.Module):  # the "out" entry of the dict the segmentation models return
            def __init__(self):
                super().__init__()
                self.m = inner

            def forward(self, x):
                return self.m(x)["out"]

        model = Out()
    model = randomize_batch_norm(model.eval(), seed)
    x = torch.from_numpy(np.random.default_rng(seed).standard_normal((1, 3, size, size)).astype(np.float32))
    path = os.path.join(out, name + ".onnx")
    torch.onnx.export(model, (x,), path, opset_version=17, input_names=["input"], output_names=["out"], dynamo=False)
    np.save(os.path.join(out, name + ".x.npy"), x.numpy())
    with torch.no_grad():
        np.save(os.path.join(out, name + ".torch.npy"), model(x).numpy())
    return path


def main():
    ap = argparse.ArgumentParser()
    add_common_arguments(ap, "cpu.im2col_gemm", MODELS, 64)
    check_models(ap.parse_args(), export, width=30)


if __name__ == "__main__":
    main()
