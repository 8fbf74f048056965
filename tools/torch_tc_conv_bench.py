#!/usr/bin/env python3
"""PyTorch's F.conv2d on the unet-encoder shapes in a Tensor Core format, the baseline of cuda.tensor_core (issue 20).

Same shapes as `convscope-cli bench --suite unet-encoder` (batch 4, 3x3, padding 1, bias), channels_last like the
ConvScope sessions of these modes, dtype fp16 or bf16 (tf32: FP32 tensors with TF32 allowed in cuDNN and cuBLAS);
torch.backends.cudnn.benchmark = True. Times are CUDA events around each call, median of --repeat after --warmup calls.
It also measures the format's dense GEMM rate (torch.mm, 8192^3, cuBLAS), the denominator of the issue's "60% of the
GEMM rate on the layers of 38 GFLOP or more".

    /opt/torch/.venv/bin/python tools/torch_tc_conv_bench.py --math fp16 [--ours bench.json] [--selection cuda.tensor_core]

With --ours (the JSON of `convscope-cli bench --suite unet-encoder ... --json FILE`) it prints t(torch) / t(ours) per
layer (the issue asks for a median of at least 0.8) and our rate as a share of the GEMM rate.
"""
import argparse
import json
import statistics

import torch
import torch.nn.functional as F

# Keep in step with compute/sweep.cpp (unetEncoderCases).
CASES = [(3, 64, 512), (64, 64, 512), (64, 128, 256), (128, 128, 256), (128, 256, 128), (256, 256, 128),
         (256, 512, 64), (512, 512, 64), (512, 1024, 32), (1024, 1024, 32)]
BATCH = 4
DTYPES = {"tf32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def case_name(cin, cout, size):
    return f"{cin}→{cout} @{size}²"


def ours_medians(path, selection):
    """case name -> median compute ms of `selection` on the case's first layer."""
    doc = json.load(open(path))
    result = {}
    for case in doc.get("cases", []):
        for sel in case["report"]["selections"]:
            if sel["selection"] == selection and sel.get("layers"):
                result[case["name"]] = sel["layers"][0]["compute_ms"]["median"]
    return result


def timed(fn, warmup, repeat):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeat):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--math", default="fp16", choices=list(DTYPES))
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--ours", help="convscope-cli bench JSON to compare with")
    ap.add_argument("--selection", default="cuda.tensor_core")
    args = ap.parse_args()

    dtype = DTYPES[args.math]
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = args.math == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = args.math == "tf32"
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(0)

    n = 8192
    a = torch.rand(n, n, device=dev, generator=gen).to(dtype)
    b = torch.rand(n, n, device=dev, generator=gen).to(dtype)
    gemm_ms = timed(lambda: torch.mm(a, b), 3, 10)
    gemm_tflops = 2.0 * n ** 3 / gemm_ms / 1e9
    del a, b

    ours = ours_medians(args.ours, args.selection) if args.ours else {}
    print(f"torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, {torch.cuda.get_device_name()}, "
          f"math {args.math}, channels_last, cudnn.benchmark on, median of {args.repeat} after {args.warmup} warm-up calls")
    print(f"cuBLAS {args.math} GEMM {n}^3: {gemm_ms:.3f} ms, {gemm_tflops:.1f} TFLOP/s")
    header = f"{'case':<16} {'GFLOP':>6} {'torch ms':>9} {'TFLOP/s':>8}"
    if ours:
        header += f" {args.selection + ' ms':>22} {'TFLOP/s':>8} {'torch/ours':>10} {'of GEMM':>8}"
    print(header)
    ratios = []
    for cin, cout, size in CASES:
        x = (torch.rand(BATCH, cin, size, size, device=dev, generator=gen) * 2 - 1).to(dtype)
        x = x.contiguous(memory_format=torch.channels_last)
        w = ((torch.rand(cout, cin, 3, 3, device=dev, generator=gen) * 2 - 1) * (6.0 / (cin * 9)) ** 0.5).to(dtype)
        w = w.contiguous(memory_format=torch.channels_last)
        bias = torch.zeros(cout, device=dev, dtype=dtype)
        med = timed(lambda: F.conv2d(x, w, bias, stride=1, padding=1), args.warmup, args.repeat)
        flops = 2.0 * BATCH * cout * size * size * cin * 9
        name = case_name(cin, cout, size)
        line = f"{name:<16} {flops / 1e9:>6.1f} {med:>9.4f} {flops / med / 1e9:>8.1f}"
        if name in ours:
            r = med / ours[name]
            ratios.append(r)
            rate = flops / ours[name] / 1e9
            share = f"{100 * rate / gemm_tflops:.0f}%" if flops >= 38e9 else ""
            line += f" {ours[name]:>22.4f} {rate:>8.1f} {r:>9.3f}× {share:>8}"
        print(line, flush=True)
        del x, w, bias
    if ratios:
        print(f"torch/ours: median {statistics.median(ratios):.3f}×, min {min(ratios):.3f}× over {len(ratios)} layers "
              f"(goal: median ≥ 0.8)")


if __name__ == "__main__":
    main()
