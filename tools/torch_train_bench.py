#!/usr/bin/env python3
"""PyTorch eager, the anchor of the training benchmarks (issue 33): one training step of torchvision's ResNet-18
(cross-entropy, SGD with momentum 0.9) and the DCGAN tutorial's loop (its generator and discriminator at 64×64,
Adam lr 2e-4, betas (0.5, 0.999), BCE), in FP32, on the CPU (--threads) or a GPU, seeded random weights, no
download. Prints one JSON object per line: {"model", "device", "batch", "threads", "step_ms"} (the median of
--repeat steps after --warmup), the same step `convscope-cli train` and `convscope-cli gan` time.

A developer tool (tools/cpu-scaling.sh's train stage and tools/gpu-check.sh run it in the same call as ConvScope);
never a dependency of ConvScope.

    /opt/torch/.venv/bin/python tools/torch_train_bench.py --model resnet18:8 --model dcgan:16 --device cpu --threads 16
"""
import argparse
import contextlib
import json
import statistics
import time

import torch
import torch.nn as nn


def dcgan(nz=100, ngf=64, ndf=64):
    g = nn.Sequential(
        nn.ConvTranspose2d(nz, ngf * 8, 4, 1, 0, bias=False), nn.BatchNorm2d(ngf * 8), nn.ReLU(True),
        nn.ConvTranspose2d(ngf * 8, ngf * 4, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf * 4), nn.ReLU(True),
        nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf * 2), nn.ReLU(True),
        nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf), nn.ReLU(True),
        nn.ConvTranspose2d(ngf, 3, 4, 2, 1, bias=False), nn.Tanh())
    d = nn.Sequential(
        nn.Conv2d(3, ndf, 4, 2, 1, bias=False), nn.LeakyReLU(0.2, inplace=True),
        nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 2), nn.LeakyReLU(0.2, inplace=True),
        nn.Conv2d(ndf * 2, ndf * 4, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 4), nn.LeakyReLU(0.2, inplace=True),
        nn.Conv2d(ndf * 4, ndf * 8, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 8), nn.LeakyReLU(0.2, inplace=True),
        nn.Conv2d(ndf * 8, 1, 4, 1, 0, bias=False), nn.Sigmoid())
    return g, d


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def timed(step, device, warmup, repeat):
    for _ in range(warmup):
        step()
    sync(device)
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        step()
        sync(device)
        samples.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(samples)


def autocast(device, math):
    """fp16 / bf16: PyTorch's mixed precision (autocast), what ConvScope's train --math fp16 / bf16 is; else nothing."""
    if math in ("fp16", "bf16"):
        return torch.autocast(device.type, dtype=torch.float16 if math == "fp16" else torch.bfloat16)
    return contextlib.nullcontext()


def classifier_step(name, batch, device, size, math):
    import torchvision
    model = getattr(torchvision.models, name)(weights=None).to(device).train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(batch, 3, size, size, device=device)
    y = torch.randint(0, 1000, (batch,), device=device)
    loss = nn.CrossEntropyLoss()
    # fp16: GradScaler (init_scale 65536, ConvScope's too); bf16 runs unscaled, as ConvScope.
    scaler = torch.amp.GradScaler(device.type, enabled=math == "fp16")

    def step():
        opt.zero_grad(set_to_none=False)
        with autocast(device, math):
            value = loss(model(x), y)
        scaler.scale(value).backward()
        scaler.step(opt)
        scaler.update()
    return step


def gan_step(batch, device, math):
    g, d = dcgan()
    g, d = g.to(device).train(), d.to(device).train()
    opt_g = torch.optim.Adam(g.parameters(), lr=2e-4, betas=(0.5, 0.999))
    opt_d = torch.optim.Adam(d.parameters(), lr=2e-4, betas=(0.5, 0.999))
    bce = nn.BCELoss()
    real = torch.rand(batch, 3, 64, 64, device=device) * 2 - 1
    ones, zeros = torch.ones(batch, device=device), torch.zeros(batch, device=device)

    # fp16: one GradScaler for both optimizers (PyTorch's AMP recipe for several models and optimizers: each backward
    # on its scaled loss, scaler.step per optimizer, one scaler.update a step), as ConvScope's gan --math fp16.
    scaler = torch.amp.GradScaler(device.type, enabled=math == "fp16")

    def judged(images):  # autocast refuses BCELoss inside it: the networks in it, the loss in FP32 outside
        with autocast(device, math):
            return d(images)

    def step():  # the tutorial's loop
        d.zero_grad()
        scaler.scale(bce(judged(real).float().view(-1), ones)).backward()
        with autocast(device, math):
            fake = g(torch.randn(batch, 100, 1, 1, device=device))
        scaler.scale(bce(judged(fake.detach()).float().view(-1), zeros)).backward()
        scaler.step(opt_d)
        g.zero_grad()
        scaler.scale(bce(judged(fake).float().view(-1), ones)).backward()
        scaler.step(opt_g)
        scaler.update()
    return step


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", action="append", required=True, help="NAME:BATCH: resnet18 (any torchvision builder) "
                   "or dcgan")
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=0, help="torch.set_num_threads on the CPU (0: PyTorch's default)")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--math", default="fp32", choices=["fp32", "tf32", "fp16", "bf16"],
                   help="tf32: allow_tf32 for cuDNN's convolutions and cuBLAS's GEMMs (ConvScope's train --math tf32); "
                   "fp16 / bf16: autocast, fp16 with GradScaler (ConvScope's mixed precision on cudnn; the DCGAN "
                   "loop's one scaler spans both optimizers)")
    args = p.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.backends.cudnn.allow_tf32 = args.math == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = args.math == "tf32"
    torch.backends.cudnn.benchmark = True
    torch.manual_seed(0)
    device = torch.device(args.device)
    for spec in args.model:
        name, batch = spec.split(":")
        if name == "dcgan":
            step = gan_step(int(batch), device, args.math)
        else:
            step = classifier_step(name, int(batch), device, args.size, args.math)
        ms = timed(step, device, args.warmup, args.repeat)
        print(json.dumps({"model": name, "device": args.device, "batch": int(batch),
                          "threads": torch.get_num_threads(), "math": args.math, "step_ms": ms}), flush=True)


if __name__ == "__main__":
    main()
