#!/usr/bin/env python3
"""Writes torchvision's ResNets (He et al. 2015, the ImageNet networks) layer for layer as ConvScope network files, with
seeded weights and batch-norm statistics: a 7×7 stride-2 stem, max pool, four stages of basic blocks (ResNet-18, 34)
or bottleneck blocks (ResNet-50, 101, 152: 1×1 down to the stage's width, 3×3 carrying the stage's stride as
torchvision does, 1×1 up to four times the width), 1×1 projections where a block changes the shape, global average
pool, a 1000-way linear layer.

  python3 tools/make_resnet_example.py             # resources/networks/resnet18.json, the bundled example (the ONNX
                                                   # issue's whole-network benchmark)
  python3 tools/make_resnet_example.py --depth 50  # tools/networks/resnet50.json (issue 32's whole-network goals:
                                                   # 177 layers; kept out of the examples the tests run everywhere)

Run from anywhere; --out writes elsewhere."""
import argparse
import json
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BLOCKS = {18: (False, [2, 2, 2, 2]), 34: (False, [3, 4, 6, 3]), 50: (True, [3, 4, 6, 3]),
          101: (True, [3, 4, 23, 3]), 152: (True, [3, 8, 36, 3])}
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


def relu(name):
    return {"type": "relu", "name": name}


def resnet(depth):
    bottleneck, counts = BLOCKS[depth]
    expansion = 4 if bottleneck else 1
    layers = [conv("conv1", 64, 7, 2, 3), bn("bn1"), relu("relu"),
              {"type": "maxpool2d", "name": "maxpool", "kernel_size": [3, 3], "stride": [2, 2],
               "padding": [1, 1, 1, 1]}]
    previous, channels = "maxpool", 64
    for stage, (width, count) in enumerate(zip([64, 128, 256, 512], counts), start=1):
        for block in range(count):
            p = f"layer{stage}.{block}"
            stride = 2 if stage > 1 and block == 0 else 1
            out = width * expansion
            if bottleneck:
                layers += [conv(p + ".conv1", width, 1, 1, 0, [previous]), bn(p + ".bn1"), relu(p + ".relu1"),
                           conv(p + ".conv2", width, 3, stride, 1), bn(p + ".bn2"), relu(p + ".relu2"),
                           conv(p + ".conv3", out, 1, 1, 0), bn(p + ".bn3")]
                last, final = p + ".bn3", p + ".relu3"
            else:
                layers += [conv(p + ".conv1", width, 3, stride, 1, [previous]), bn(p + ".bn1"), relu(p + ".relu1"),
                           conv(p + ".conv2", width, 3, 1, 1), bn(p + ".bn2")]
                last, final = p + ".bn2", p + ".relu2"
            shortcut = previous
            if stride != 1 or channels != out:
                layers += [conv(p + ".downsample.0", out, 1, stride, 0, [previous]), bn(p + ".downsample.1")]
                shortcut = p + ".downsample.1"
            layers += [{"type": "add", "name": p + ".add", "inputs": [shortcut, last]}, relu(final)]
            previous, channels = final, out
    layers += [{"type": "global_avgpool2d", "name": "avgpool"}, {"type": "flatten", "name": "flatten"},
               {"type": "linear", "name": "fc", "out_features": 1000, "init": {"kind": "default", "seed": nxt()}}]
    return layers


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--depth", type=int, default=18, choices=sorted(BLOCKS))
    ap.add_argument("--out", help="the file to write (default: see above)")
    args = ap.parse_args()
    layers = resnet(args.depth)
    net = {"format": "convscope-network", "version": 1,
           "name": f"ResNet-{args.depth} (torchvision layout, seeded weights)",
           "input": {"batch": 1, "channels": 3, "height": 224, "width": 224, "source": "sample:edges"}}
    path = args.out or (os.path.join(ROOT, "resources", "networks", "resnet18.json") if args.depth == 18
                        else os.path.join(ROOT, "tools", "networks", f"resnet{args.depth}.json"))
    with open(path, "w") as f:
        f.write("{\n")
        for key in ("format", "version", "name", "input"):
            f.write(f'  "{key}": {json.dumps(net[key], ensure_ascii=False)},\n')
        f.write('  "layers": [\n')
        f.write(",\n".join("    " + json.dumps(l, ensure_ascii=False) for l in layers))
        f.write("\n  ]\n}\n")
    print(f"wrote {path}: {len(layers)} layers")


if __name__ == "__main__":
    main()
