#!/usr/bin/env python3
"""PyTorch's F.conv2d on the unet-encoder shapes, for the ratio cudnn.auto / PyTorch (issue 4).

Same shapes, same layout, same math as `convscope-cli bench --suite unet-encoder`:
batch 4, 3x3, padding 1, bias. torch.backends.cudnn.benchmark = True (PyTorch's own timed algorithm choice,
like cudnn.auto); FP32 with TF32 off in cuDNN and cuBLAS, or TF32 on; fp16 / bf16 run the input, weight and bias
in that dtype (issue 20). Layout: NCHW contiguous for fp32, channels_last (torch.channels_last) for the Tensor Core
modes by default, since a ConvScope session stores tensors channels-last in tf32/fp16/bf16 (--channels-last /
--no-channels-last override). Times are CUDA events around --inner back-to-back calls divided by --inner (default 10),
median of --repeat such samples after --warmup calls (the first call runs the benchmark search, untimed). Events
around a single call would count PyTorch's host-side dispatch (tens of µs) whenever the call is shorter than it:
the GPU idles between the start event and the kernel. ConvScope's launch gate keeps that out of its own layer times.

    /opt/torch/.venv/bin/python tools/torch_conv_bench.py [--math fp32|tf32|fp16|bf16] [--channels-last]
        [--ours bench.json] [--cases 0-9]

With --ours (the JSON of `convscope-cli bench ... --backends cudnn.auto,... --json FILE`) it prints the ratio
ours / PyTorch per layer; the issue asks for <= 1.05 on every layer. --selection picks whose layers (default
cudnn.auto; cuda.tensor_core for issue 20's own kernel). --gemm also measures the mode's dense GEMM rate (torch.mm
8192^3, cuBLAS) and prints, on the layers of 38 GFLOP or more, the selection's rate as a share of it (issue 20: 60%).
"""
import argparse
import json
import statistics

import torch
import torch.nn.functional as F

# Keep in step with cli/bench_suites.cpp (unetEncoder).
CASES = [(3, 64, 512), (64, 64, 512), (64, 128, 256), (128, 128, 256), (128, 256, 128), (256, 256, 128),
         (256, 512, 64), (512, 512, 64), (512, 1024, 32), (1024, 1024, 32)]
BATCH = 4


def case_name(cin, cout, size):
    return f"{cin}→{cout} @{size}²"


def parse_cases(text):
    if not text:
        return list(range(len(CASES)))
    out = []
    for item in text.split(","):
        lo, _, hi = item.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def ours_medians(path, selection):
    """case name -> median compute ms of `selection` on the case's first layer."""
    doc = json.load(open(path))
    result = {}
    for case in doc.get("cases", []):
        for sel in case["report"]["selections"]:
            if sel["selection"] == selection and sel.get("layers"):
                result[case["name"]] = sel["layers"][0]["compute_ms"]["median"]
    return result


def gemm_rate(dtype, dev, inner):
    """TFLOP/s of torch.mm on 8192^3 operands of `dtype` (cuBLAS; TF32 as the backends flags say), best of 5."""
    n = 8192
    gen = torch.Generator(device=dev).manual_seed(1)
    a = torch.rand(n, n, device=dev, generator=gen).to(dtype)
    b = torch.rand(n, n, device=dev, generator=gen).to(dtype)
    for _ in range(3):
        torch.mm(a, b)
    best = None
    for _ in range(5):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(inner):
            torch.mm(a, b)
        e.record()
        e.synchronize()
        ms = s.elapsed_time(e) / inner
        best = ms if best is None else min(best, ms)
    rate = 2.0 * n ** 3 / best / 1e9
    print(f"torch.mm {dtype} {n}^3: {best:.3f} ms, {rate:.1f} TFLOP/s")
    return rate


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--math", default="fp32", choices=["fp32", "tf32", "fp16", "bf16"])
    ap.add_argument("--channels-last", dest="channels_last", action="store_true", default=None,
                    help="torch.channels_last tensors (default for tf32, fp16, bf16)")
    ap.add_argument("--no-channels-last", dest="channels_last", action="store_false")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--inner", type=int, default=10, help="back-to-back calls per timed sample")
    ap.add_argument("--cases", default="")
    ap.add_argument("--ours", help="convscope-cli bench JSON to compare with")
    ap.add_argument("--selection", default="cudnn.auto")
    ap.add_argument("--gemm", action="store_true", help="also the mode's torch.mm 8192^3 rate and our share of it")
    args = ap.parse_args()

    tf32 = args.math == "tf32"
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(args.math, torch.float32)
    channels_last = args.channels_last if args.channels_last is not None else args.math != "fp32"
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = tf32
    torch.backends.cuda.matmul.allow_tf32 = tf32
    dev = torch.device("cuda")
    ours = ours_medians(args.ours, args.selection) if args.ours else {}
    gemm_tflops = gemm_rate(dtype, dev, args.inner) if args.gemm else None
    print(f"torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, {torch.cuda.get_device_name()}, "
          f"math {args.math} ({dtype}, {'channels_last' if channels_last else 'NCHW'}), cudnn.benchmark on, median of {args.repeat} "
          f"samples of {args.inner} back-to-back calls after {args.warmup} warm-up calls")
    header = f"{'case':<16} {'torch ms':>10} {'TFLOP/s':>8}"
    if ours:
        header += f" {args.selection + ' ms':>16} {'ours/torch':>10}" + (f" {'of GEMM':>8}" if gemm_tflops else "")
    print(header)
    ratios = []
    gen = torch.Generator(device=dev).manual_seed(0)
    for i in parse_cases(args.cases):
        cin, cout, size = CASES[i]
        x = torch.rand(BATCH, cin, size, size, device=dev, generator=gen) * 2 - 1
        w = (torch.rand(cout, cin, 3, 3, device=dev, generator=gen) * 2 - 1) * (6.0 / (cin * 9)) ** 0.5
        b = torch.zeros(cout, device=dev)
        x, w, b = x.to(dtype).contiguous(memory_format=fmt), w.to(dtype).contiguous(memory_format=fmt), b.to(dtype)
        for _ in range(args.warmup):
            F.conv2d(x, w, b, stride=1, padding=1)
        torch.cuda.synchronize()
        times = []
        for _ in range(args.repeat):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            for _ in range(args.inner):
                F.conv2d(x, w, b, stride=1, padding=1)
            e.record()
            e.synchronize()
            times.append(s.elapsed_time(e) / args.inner)
        med = statistics.median(times)
        flops = 2.0 * BATCH * cout * size * size * cin * 9
        line = f"{case_name(cin, cout, size):<16} {med:>10.4f} {flops / med / 1e9:>8.1f}"
        name = case_name(cin, cout, size)
        if name in ours:
            r = ours[name] / med
            ratios.append(r)
            line += f" {ours[name]:>16.4f} {r:>9.3f}×"
            if gemm_tflops and flops >= 38e9:
                line += f" {100 * flops / ours[name] / 1e9 / gemm_tflops:>7.0f}%"
        print(line, flush=True)
        del x, w, b
    if ratios:
        print(f"ours/torch: max {max(ratios):.3f}×, median {statistics.median(ratios):.3f}× over {len(ratios)} layers "
              f"({'all' if max(ratios) <= 1.05 else 'NOT all'} ≤ 1.05)")


if __name__ == "__main__":
    main()
