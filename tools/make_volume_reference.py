#!/usr/bin/env python3
"""Reference outputs of the 3-D layers from PyTorch (developer tool, not a build dependency).

For each case it writes, under --out (tests/data/volumes):
  <case>.json         a ConvScope network of one layer whose input and weights are the files below
  <case>.input.npy    the input, float32 [N, C, D, H, W], seeded uniform(-1, 1)
  <case>.weight.npy / .bias.npy, or .running_mean/.running_var/.weight/.bias.npy (batchnorm3d), float32
  <case>.output.npy   PyTorch's output, computed in float64 from the float32 data and stored as float32

tests/compute/volume_reference_test.cpp runs every <case>.json on cpu.direct and on the fast CPU path and compares
with <case>.output.npy. The cases cover asymmetric padding (ConvScope's [front, back, top, bottom, left, right],
made in PyTorch with F.pad before the layer, or by cropping a transposed convolution's full output), TensorFlow's
"same", dilation, groups, output_padding, ceil_mode, count_include_pad and divisor_override. Reruns give identical
files (fixed seeds).

    python3 -m venv venv && venv/bin/pip install torch numpy
    venv/bin/python tools/make_volume_reference.py --out tests/data/volumes
"""
import argparse
import json
import math
import os

import numpy as np
import torch
import torch.nn.functional as F


def uniform(shape, seed):
    return np.random.default_rng(seed).uniform(-1.0, 1.0, size=shape).astype(np.float32)


def same_pads(size, k, s, d):
    # TensorFlow "same": out = ceil(in / s); the odd padding plane goes at the end.
    out = -(-size // s)
    total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
    return total // 2, total - total // 2


def t64(a):
    return torch.from_numpy(a.astype(np.float64))


class Writer:
    def __init__(self, out):
        self.out = out
        os.makedirs(out, exist_ok=True)

    def npy(self, case, what, array):
        name = f"{case}.{what}.npy"
        np.save(os.path.join(self.out, name), np.ascontiguousarray(array, dtype=np.float32))
        return name

    def network(self, case, x, layer, output):
        n, c, d, h, w = x.shape
        net = {
            "format": "convscope-network", "version": 1, "name": case,
            "input": {"batch": n, "channels": c, "depth": d, "height": h, "width": w,
                      "source": self.npy(case, "input", x)},
            "layers": [dict(layer, name="layer")],
        }
        with open(os.path.join(self.out, case + ".json"), "w") as f:
            json.dump(net, f, indent=1)
            f.write("\n")
        self.npy(case, "output", output.numpy())


def conv3d_case(wr, case, shape, out_channels, k, stride, padding, dilation=(1, 1, 1), groups=1, seed=1):
    x = uniform(shape, seed)
    cin = shape[1]
    w = uniform((out_channels, cin // groups) + tuple(k), seed + 1) * 0.5
    b = uniform((out_channels,), seed + 2)
    if padding == "same":
        pads = []
        for axis in range(3):
            pads += list(same_pads(shape[2 + axis], k[axis], stride[axis], dilation[axis]))
    else:
        pads = list(padding)
    front, back, top, bottom, left, right = pads
    xp = F.pad(t64(x), (left, right, top, bottom, front, back))
    y = F.conv3d(xp, t64(w), t64(b), stride=stride, dilation=dilation, groups=groups)
    layer = {"type": "conv3d", "out_channels": out_channels, "kernel_size": list(k), "stride": list(stride),
             "padding": padding if padding == "same" else list(padding), "dilation": list(dilation),
             "groups": groups, "bias": True,
             "init": {"weight": wr.npy(case, "weight", w), "bias": wr.npy(case, "bias", b)}}
    wr.network(case, x, layer, y)


def conv_transpose3d_case(wr, case, shape, out_channels, k, stride, padding, output_padding, dilation=(1, 1, 1),
                          groups=1, seed=1):
    x = uniform(shape, seed)
    cin = shape[1]
    w = uniform((cin, out_channels // groups) + tuple(k), seed + 1) * 0.5
    b = uniform((out_channels,), seed + 2)
    # The full transposed output (no crop) with output_padding, then ConvScope's asymmetric crop; for a symmetric
    # padding this is exactly PyTorch's padding argument.
    full = F.conv_transpose3d(t64(x), t64(w), t64(b), stride=stride, padding=0, output_padding=output_padding,
                              groups=groups, dilation=dilation)
    front, back, top, bottom, left, right = padding
    D, H, W = full.shape[2:]
    y = full[:, :, front:D - back, top:H - bottom, left:W - right]
    if front == back and top == bottom and left == right:
        check = F.conv_transpose3d(t64(x), t64(w), t64(b), stride=stride, padding=(front, top, left),
                                   output_padding=output_padding, groups=groups, dilation=dilation)
        assert torch.equal(check, y)
    layer = {"type": "conv_transpose3d", "out_channels": out_channels, "kernel_size": list(k),
             "stride": list(stride), "padding": list(padding), "output_padding": list(output_padding),
             "dilation": list(dilation), "groups": groups, "bias": True,
             "init": {"weight": wr.npy(case, "weight", w), "bias": wr.npy(case, "bias", b)}}
    wr.network(case, x, layer, y)


def pool_case(wr, case, shape, kind, k, stride=None, padding=(0, 0, 0), dilation=(1, 1, 1), ceil_mode=False,
              count_include_pad=True, divisor_override=None, seed=1):
    x = uniform(shape, seed)
    if kind == "maxpool3d":
        y = F.max_pool3d(t64(x), k, stride=stride, padding=padding, dilation=dilation, ceil_mode=ceil_mode)
        layer = {"type": kind, "kernel_size": list(k), "stride": list(stride) if stride else None,
                 "padding": list(padding), "dilation": list(dilation), "ceil_mode": ceil_mode}
    else:
        y = F.avg_pool3d(t64(x), k, stride=stride, padding=padding, ceil_mode=ceil_mode,
                         count_include_pad=count_include_pad, divisor_override=divisor_override)
        layer = {"type": kind, "kernel_size": list(k), "stride": list(stride) if stride else None,
                 "padding": list(padding), "ceil_mode": ceil_mode, "count_include_pad": count_include_pad,
                 "divisor_override": divisor_override}
    wr.network(case, x, layer, y)


def batchnorm3d_case(wr, case, shape, eps, seed=1):
    x = uniform(shape, seed)
    c = shape[1]
    rng = np.random.default_rng(seed + 1)
    mean = rng.uniform(-0.5, 0.5, c).astype(np.float32)
    var = rng.uniform(0.5, 2.0, c).astype(np.float32)
    weight = rng.uniform(0.5, 1.5, c).astype(np.float32)
    bias = rng.uniform(-0.5, 0.5, c).astype(np.float32)
    y = F.batch_norm(t64(x), t64(mean), t64(var), t64(weight), t64(bias), training=False, eps=eps)
    layer = {"type": "batchnorm3d", "eps": eps, "affine": True,
             "running_mean": wr.npy(case, "running_mean", mean), "running_var": wr.npy(case, "running_var", var),
             "weight": wr.npy(case, "weight", weight), "bias": wr.npy(case, "bias", bias)}
    wr.network(case, x, layer, y)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="tests/data/volumes")
    args = parser.parse_args()
    wr = Writer(args.out)
    conv3d_case(wr, "conv3d_asymmetric", (2, 3, 5, 6, 7), 4, (3, 3, 3), (1, 1, 1), (1, 0, 2, 1, 0, 2), seed=10)
    conv3d_case(wr, "conv3d_dilation_groups", (1, 4, 7, 8, 9), 6, (3, 2, 3), (2, 1, 2), (2, 2, 1, 1, 2, 2),
                dilation=(2, 2, 1), groups=2, seed=20)
    conv3d_case(wr, "conv3d_same_lecture", (2, 2, 12, 11, 13), 4, (5, 5, 5), (2, 2, 4), "same", seed=30)
    conv3d_case(wr, "conv3d_depthwise", (1, 4, 5, 6, 5), 4, (3, 3, 3), (1, 2, 1), (1, 1, 0, 2, 1, 1), groups=4,
                seed=35)
    conv_transpose3d_case(wr, "conv_transpose3d_output_padding", (2, 4, 3, 4, 5), 3, (3, 3, 3), (2, 2, 2),
                          (1, 1, 1, 1, 1, 1), (1, 1, 1), seed=40)
    conv_transpose3d_case(wr, "conv_transpose3d_asymmetric_groups", (1, 4, 3, 4, 5), 6, (2, 3, 3), (3, 1, 2),
                          (1, 0, 0, 2, 1, 1), (2, 0, 1), dilation=(1, 2, 2), groups=2, seed=50)
    pool_case(wr, "maxpool3d_ceil", (2, 3, 9, 8, 7), "maxpool3d", (3, 3, 3), (2, 2, 2), (1, 1, 1), ceil_mode=True,
              seed=60)
    pool_case(wr, "maxpool3d_dilation", (1, 2, 7, 9, 8), "maxpool3d", (2, 3, 2), None, (0, 1, 1), dilation=(2, 1, 2),
              seed=70)
    pool_case(wr, "avgpool3d_ceil_exclude_pad", (2, 3, 9, 8, 7), "avgpool3d", (3, 3, 3), (2, 2, 2), (1, 1, 1),
              ceil_mode=True, count_include_pad=False, seed=80)
    pool_case(wr, "avgpool3d_ceil_include_pad", (1, 2, 8, 6, 7), "avgpool3d", (3, 2, 3), (2, 2, 2), (1, 1, 1),
              ceil_mode=True, count_include_pad=True, seed=90)
    pool_case(wr, "avgpool3d_divisor", (1, 2, 7, 6, 5), "avgpool3d", (2, 2, 2), None, (0, 0, 0), divisor_override=3,
              seed=100)
    batchnorm3d_case(wr, "batchnorm3d", (2, 5, 4, 5, 6), 1e-3, seed=110)
    print("wrote", len([f for f in os.listdir(args.out) if f.endswith(".json")]), "cases to", args.out)


if __name__ == "__main__":
    main()
