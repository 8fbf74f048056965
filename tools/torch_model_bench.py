#!/usr/bin/env python3
"""A torchvision model's whole inference pass: PyTorch eager against ConvScope on the same ONNX export, side by side
in one run on the GPU machine (issue 30's speed goal: DeepLabV3 (MobileNetV3) at batch 8, 512², cudnn.auto and our best
≤ 1.1× PyTorch eager).

The model is built with seeded random weights (weights=None, batch-norm statistics drawn from a seeded generator: no
download), exported to ONNX (opset 17) at the batch and size asked for, timed in PyTorch eager on the GPU in FP32
(cudnn.benchmark on, TF32 off; NCHW and channels_last, the faster counts) with CUDA events, then run by
`convscope-cli run model.onnx` on each selection (the sum of the layers' compute times, median over the passes, as
tools/torch_graph_bench.py measures it). PyTorch is a developer tool here, never a dependency of ConvScope.

    python3 tools/torch_model_bench.py --cli build-gpu/bin/convscope-cli --model deeplabv3_mobilenet_v3_large \
        --batch 8 --size 512 --backends cudnn.auto,cudnn.auto+fused,cuda.implicit_gemm,cuda.implicit_gemm+fused
"""
import argparse
import os
import statistics
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_graph_bench import run_convscope, time_torch  # noqa: E402


class FirstOutput(torch.nn.Module):
    """The "out" entry of the dict torchvision's segmentation models return."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        return self.inner(x)["out"]


def build(name, seed):
    import torchvision

    torch.manual_seed(seed)
    if hasattr(torchvision.models.segmentation, name):
        model = FirstOutput(getattr(torchvision.models.segmentation, name)(weights=None, weights_backbone=None))
    else:
        model = getattr(torchvision.models, name)(weights=None)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.weight.copy_(torch.rand(m.weight.shape, generator=g) + 0.5)
                m.bias.copy_(torch.rand(m.bias.shape, generator=g) - 0.5)
                m.running_mean.copy_(torch.rand(m.running_mean.shape, generator=g) * 0.2 - 0.1)
                m.running_var.copy_(torch.rand(m.running_var.shape, generator=g) + 0.5)
    return model.eval()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cli", required=True)
    ap.add_argument("--model", default="deeplabv3_mobilenet_v3_large")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--size", type=int, default=512)
    ap.add_argument("--backends", default="cudnn.auto,cudnn.auto+fused,cuda.implicit_gemm,cuda.implicit_gemm+fused")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--out", default="/tmp/torch_model_bench")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)

    model = build(a.model, a.seed)
    x = np.random.default_rng(a.seed).standard_normal((a.batch, 3, a.size, a.size)).astype(np.float32)
    path = os.path.join(a.out, f"{a.model}_b{a.batch}_{a.size}.onnx")
    npy = os.path.join(a.out, "x.npy")
    np.save(npy, x)
    torch.onnx.export(model, (torch.from_numpy(x),), path, opset_version=17, input_names=["input"],
                      output_names=["out"], dynamo=False)

    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    gpu = model.cuda()
    xt = torch.from_numpy(x).cuda()
    eager = {"NCHW": time_torch(gpu, xt, a.warmup, a.repeat)}
    gpu = gpu.to(memory_format=torch.channels_last)
    eager["channels_last"] = time_torch(gpu, xt.contiguous(memory_format=torch.channels_last), a.warmup, a.repeat)
    layout, anchor = min(eager.items(), key=lambda kv: kv[1])

    ours, _ = run_convscope(a.cli, path, npy, a.backends, a.warmup, a.repeat, a.out)
    print(f"\n{a.model}, batch {a.batch}, {a.size}², FP32 (TF32 off), whole pass")
    print(f"{'selection':34} {'ms':>9} {'/ eager':>8}")
    for lay, ms in eager.items():
        print(f"{'PyTorch eager ' + lay:34} {ms:9.3f} {ms / anchor:7.2f}×")
    best = None
    for sel, (ms, failure, _) in ours.items():
        if ms is None:
            print(f"{sel:34} {'failed':>9}  {failure.splitlines()[0] if failure else ''}")
            continue
        print(f"{sel:34} {ms:9.3f} {ms / anchor:7.2f}×")
        if sel.startswith("cuda."):
            best = ms if best is None else min(best, ms)
    if best is not None:
        print(f"our own kernels' best: {best:.3f} ms, {best / anchor:.2f}× PyTorch eager ({layout}); goal ≤ 1.10×")


if __name__ == "__main__":
    main()
