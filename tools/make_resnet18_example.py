#!/usr/bin/env python3
"""Writes resources/networks/resnet18.json: torchvision's ResNet-18 (He et al. 2015, the ImageNet network: a 7×7
stride-2 stem, max pool, four stages of two basic blocks with 1×1 stride-2 projections, global average pool, a
1000-way linear layer) layer for layer, with seeded weights and batch-norm statistics. It is the whole-network
benchmark of the ONNX issue (exported with `convscope-cli export`, imported back) and an example of a real
architecture. Run from anywhere: python3 tools/make_resnet18_example.py"""
import json
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
seed = [1000]


def nxt():
    seed[0] += 1
    return seed[0]


def conv(name, out, k, s, p, inputs=None):
    layer = {"type": "conv2d", "name": name, "out_channels": out, "kernel_size": [k, k], "stride": [s, s],
             "padding": [p, p, p, p], "groups": 1, "bias": False, "init": {"kind": "he_uniform", "seed": nxt()}}
    if inputs:
        layer["inputs"] = inputs
    return layer


def bn(name):
    return {"type": "batchnorm2d", "name": name, "init": {"kind": "random", "seed": nxt()}}


layers = [conv("conv1", 64, 7, 2, 3), bn("bn1"), {"type": "relu", "name": "relu"},
          {"type": "maxpool2d", "name": "maxpool", "kernel_size": [3, 3], "stride": [2, 2], "padding": [1, 1, 1, 1]}]
previous, channels = "maxpool", 64
for stage, width in enumerate([64, 128, 256, 512], start=1):
    for block in range(2):
        p = f"layer{stage}.{block}"
        stride = 2 if stage > 1 and block == 0 else 1
        layers += [conv(p + ".conv1", width, 3, stride, 1, [previous]), bn(p + ".bn1"),
                   {"type": "relu", "name": p + ".relu1"}, conv(p + ".conv2", width, 3, 1, 1), bn(p + ".bn2")]
        shortcut = previous
        if stride != 1 or channels != width:
            layers += [conv(p + ".downsample.0", width, 1, stride, 0, [previous]), bn(p + ".downsample.1")]
            shortcut = p + ".downsample.1"
        layers += [{"type": "add", "name": p + ".add", "inputs": [shortcut, p + ".bn2"]},
                   {"type": "relu", "name": p + ".relu2"}]
        previous, channels = p + ".relu2", width
layers += [{"type": "global_avgpool2d", "name": "avgpool"}, {"type": "flatten", "name": "flatten"},
           {"type": "linear", "name": "fc", "out_features": 1000, "init": {"kind": "default", "seed": nxt()}}]

net = {"format": "convscope-network", "version": 1, "name": "ResNet-18 (torchvision layout, seeded weights)",
       "input": {"batch": 1, "channels": 3, "height": 224, "width": 224, "source": "sample:edges"}, "layers": layers}
path = os.path.join(ROOT, "resources", "networks", "resnet18.json")
with open(path, "w") as f:
    f.write("{\n")
    for key in ("format", "version", "name", "input"):
        f.write(f'  "{key}": {json.dumps(net[key], ensure_ascii=False)},\n')
    f.write('  "layers": [\n')
    f.write(",\n".join("    " + json.dumps(l, ensure_ascii=False) for l in layers))
    f.write("\n  ]\n}\n")
print(f"wrote {path}: {len(layers)} layers")
