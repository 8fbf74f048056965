#!/usr/bin/env python3
"""PyTorch CPU, the anchor of the CPU benchmarks (issue 35): torchvision's ResNet-18 and VGG-16 (seeded random
weights, no download) in FP32 eager mode, inference (torch.inference_mode), at the batch sizes given, NCHW and
channels_last, on --threads threads (torch.set_num_threads); the faster layout counts. Prints one JSON object per
line: {"model", "batch", "threads", "nchw_ms", "channels_last_ms", "best_ms"} (medians of --repeat passes after
--warmup). A developer tool for the GPU machine's CPU (tools/cpu-scaling.sh runs it in the same call as ConvScope);
never a dependency of ConvScope.

    /opt/torch/.venv/bin/python tools/torch_cpu_bench.py --model resnet18:1 --model resnet18:8 --model vgg16:1 \
        --threads 16
"""
import argparse
import json
import statistics
import time

import torch
import torchvision


def timed(model, x, warmup, repeat):
    with torch.inference_mode():
        for _ in range(warmup):
            model(x)
        samples = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            model(x)
            samples.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(samples)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", action="append", required=True, help="NAME:BATCH, NAME a torchvision.models builder")
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--size", type=int, default=224)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    for spec in args.model:
        name, batch = spec.split(":")
        model = getattr(torchvision.models, name)(weights=None).eval()
        x = torch.randn(int(batch), 3, args.size, args.size)
        nchw = timed(model, x, args.warmup, args.repeat)
        cl_model = model.to(memory_format=torch.channels_last)
        cl = timed(cl_model, x.to(memory_format=torch.channels_last), args.warmup, args.repeat)
        print(json.dumps({"model": name, "batch": int(batch), "threads": args.threads, "nchw_ms": nchw,
                          "channels_last_ms": cl, "best_ms": min(nchw, cl)}), flush=True)


if __name__ == "__main__":
    main()
