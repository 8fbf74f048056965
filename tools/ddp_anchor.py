#!/usr/bin/env python3
"""Data-parallel anchor (issue 33): PyTorch DDP against ConvScope's `train --nproc-per-node` on ResNet-18.

A developer tool (PyTorch is never a ConvScope dependency). For 1 and 2 GPUs (--gpus), with a per-GPU batch of 64
(--batch) at 224², in --math fp32 (TF32 off on both sides, the default), tf32, or fp16 / bf16 (PyTorch's autocast,
GradScaler in fp16; ConvScope's `train --math`, its gradients widened to FP32 for the all-reduce as DDP's are):
  * PyTorch: torchvision's resnet18 (random init) in DistributedDataParallel (NCCL, default 25 MB buckets), SGD with
    momentum, cross-entropy; one process per GPU started here with torchrun's environment (RANK, WORLD_SIZE,
    LOCAL_RANK, MASTER_ADDR, MASTER_PORT), each step timed on the host with a synchronize at its end (ConvScope's
    cudnn session also synchronises once per step).
  * ConvScope: `convscope-cli train resources/networks/resnet18.json --backends cudnn.auto` (or --backend's selection,
    e.g. our own kernels: cuda.implicit_gemm, cuda.tensor_core under --math tf32) on one GPU, and with
    `--nproc-per-node N` on N; the step time is the median of rank 0's step_wall_ms from the JSON report.
Prints one table: step time, images/s and scaling efficiency (t(1 GPU) / t(N GPUs) at the same per-GPU batch), and
ConvScope's all-reduce time and the part hidden behind the backward.

--model dcgan: the DCGAN loop instead (the report's wish), 64² images: PyTorch's tutorial loop with both networks in
DDP (Adam, BCE; fp16 with one GradScaler) against `convscope-cli gan resources/networks/dcgan_{generator,discriminator}.json`
(--nproc-per-node N), whose step time is the median of rank 0's "step (wall clock)".

    /opt/torch/.venv/bin/python tools/ddp_anchor.py --cli build-gpu/bin/convscope-cli
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def gan_worker(args, rank, local, half, scaler):
    import torch
    import torch.distributed as dist
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from torch_train_bench import dcgan

    torch.manual_seed(0)
    g, d = dcgan()
    g = torch.nn.parallel.DistributedDataParallel(g.cuda(), device_ids=[local])
    d = torch.nn.parallel.DistributedDataParallel(d.cuda(), device_ids=[local])
    opt_g = torch.optim.Adam(g.parameters(), lr=2e-4, betas=(0.5, 0.999))
    opt_d = torch.optim.Adam(d.parameters(), lr=2e-4, betas=(0.5, 0.999))
    bce = torch.nn.BCELoss()
    gen = torch.Generator().manual_seed(1 + rank)
    real = (torch.rand(args.batch, 3, 64, 64, generator=gen) * 2 - 1).cuda()
    ones, zeros = torch.ones(args.batch, device="cuda"), torch.zeros(args.batch, device="cuda")
    scale = (lambda v: scaler.scale(v)) if scaler else (lambda v: v)

    def judged(images):  # autocast refuses BCELoss inside it
        with torch.autocast("cuda", dtype=half, enabled=half is not None):
            return d(images)

    times = []
    for step in range(args.warmup + args.steps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        d.zero_grad()
        scale(bce(judged(real).float().view(-1), ones)).backward()
        with torch.autocast("cuda", dtype=half, enabled=half is not None):
            fake = g(torch.randn(args.batch, 100, 1, 1, device="cuda"))
        scale(bce(judged(fake.detach()).float().view(-1), zeros)).backward()
        scaler.step(opt_d) if scaler else opt_d.step()
        g.zero_grad()
        scale(bce(judged(fake).float().view(-1), ones)).backward()
        scaler.step(opt_g) if scaler else opt_g.step()
        if scaler:
            scaler.update()
        torch.cuda.synchronize()
        if step >= args.warmup:
            times.append((time.perf_counter() - t0) * 1000)
    if rank == 0:
        print("RESULT " + json.dumps({"median_ms": statistics.median(times), "world": dist.get_world_size()}),
              flush=True)
    dist.destroy_process_group()


def worker(args):
    import torch
    import torch.distributed as dist
    import torchvision

    rank, world, local = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = args.math == "tf32"
    torch.backends.cudnn.allow_tf32 = args.math == "tf32"
    half = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(args.math)
    scaler = torch.amp.GradScaler("cuda") if args.math == "fp16" else None
    dist.init_process_group("nccl")
    if args.model == "dcgan":
        return gan_worker(args, rank, local, half, scaler)
    torch.manual_seed(0)
    model = torchvision.models.resnet18(num_classes=1000).cuda()
    fmt = torch.channels_last if args.channels_last else torch.contiguous_format
    model = model.to(memory_format=fmt)
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local])
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    g = torch.Generator().manual_seed(1 + rank)
    x = torch.randn(args.batch, 3, 224, 224, generator=g).cuda().to(memory_format=fmt)
    y = torch.randint(0, 1000, (args.batch,), generator=g).cuda()
    times = []
    for step in range(args.warmup + args.steps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=half, enabled=half is not None):
            loss = loss_fn(ddp(x), y)
        if scaler:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()
        torch.cuda.synchronize()
        if step >= args.warmup:
            times.append((time.perf_counter() - t0) * 1000)
    if rank == 0:
        print("RESULT " + json.dumps({"median_ms": statistics.median(times), "world": world}), flush=True)
    dist.destroy_process_group()


def run_torch(args, n):
    port = str(free_port())
    procs = []
    for r in range(n):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(n), LOCAL_RANK=str(r), LOCAL_WORLD_SIZE=str(n),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=port, NCCL_NVLS_ENABLE=os.environ.get("NCCL_NVLS_ENABLE", "0"))
        cmd = [sys.executable, __file__, "--worker", "--batch", str(args.batch), "--steps", str(args.steps),
               "--warmup", str(args.warmup), "--math", args.math, "--model", args.model] + (
                   ["--channels-last"] if args.channels_last else [])
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    outs = [p.communicate(timeout=args.timeout)[0] for p in procs]
    for line in outs[0].splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])["median_ms"], None
    return None, outs[0][-2000:]


def run_cli_report(args, cmd, n, report):
    """Runs ConvScope's command (with --nproc-per-node n when n > 1); its JSON report, or None and the output's tail."""
    if n > 1:
        cmd = cmd + ["--nproc-per-node", str(n)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    if p.returncode != 0:
        return None, (p.stdout + p.stderr)[-2000:]
    return json.load(open(report)), None


def run_ours_gan(args, n, tmp):
    report = os.path.join(tmp, f"gan{n}.json")
    nets = [os.path.join(os.path.dirname(args.net), f"dcgan_{k}.json") for k in ("generator", "discriminator")]
    cmd = [args.cli, "gan", *nets, "--batch", str(args.batch * n), "--steps", str(args.steps), "--warmup",
           str(args.warmup), "--backends", args.backend, "--math", args.math, "--report", report]
    r, err = run_cli_report(args, cmd, n, report)
    if r is None:
        return None, None, err
    ms = statistics.median(s["ms"]["step (wall clock)"] for s in r["step_results"])
    comm = None
    if "data_parallel" in r:
        ar = statistics.median(s["ms"]["all-reduce"] for s in r["step_results"])
        hid = statistics.median(s["ms"]["all-reduce hidden"] for s in r["step_results"])
        comm = (f"all-reduce {ar:.2f} ms a step (D's fake pass and G's), {hid:.2f} ms hidden ({100 * hid / ar:.0f} %); "
                f"ranks differ by {r['data_parallel']['max_param_rel_l2']:.1e}")
    return ms, comm, None


def run_ours(args, n, tmp):
    if args.model == "dcgan":
        return run_ours_gan(args, n, tmp)
    import numpy as np

    total = args.batch * n
    rng = np.random.default_rng(1)
    x = os.path.join(tmp, f"x{total}.npy")
    y = os.path.join(tmp, f"y{total}.npy")
    np.save(x, rng.standard_normal((total, 3, 224, 224), dtype=np.float32))
    np.save(y, rng.integers(0, 1000, total).astype(np.float32))
    report = os.path.join(tmp, f"ours{n}.json")
    cmd = [args.cli, "train", args.net, "--input", x, "--target", y, "--loss", "ce", "--optimizer", "sgd", "--lr",
           "0.01", "--momentum", "0.9", "--steps", str(args.steps), "--warmup", str(args.warmup), "--backends",
           args.backend, "--math", args.math, "--report", report]
    r, err = run_cli_report(args, cmd, n, report)
    if r is None:
        return None, None, err
    sel = r["selections"][0]
    ms = statistics.median(sel["step_wall_ms"])
    comm = None
    if sel.get("buckets"):
        ar = sum(b["all_reduce_median_ms"] for b in sel["buckets"])
        hid = sum(b["hidden_median_ms"] for b in sel["buckets"])
        comm = f"all-reduce {ar:.2f} ms in {len(sel['buckets'])} buckets, {hid:.2f} ms hidden ({100 * hid / ar:.0f} %)"
    return ms, comm, None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--cli", default="build-gpu/bin/convscope-cli")
    ap.add_argument("--net", default="resources/networks/resnet18.json")
    ap.add_argument("--model", choices=["resnet18", "dcgan"], default="resnet18",
                    help="dcgan: the DCGAN loop (both networks in DDP), its files next to --net")
    ap.add_argument("--gpus", default="1,2", help="comma-separated GPU counts")
    ap.add_argument("--batch", type=int, default=64, help="per GPU")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--math", choices=["fp32", "tf32", "fp16", "bf16"], default="fp32")
    ap.add_argument("--backend", default="cudnn.auto",
                    help="ConvScope's selection (cudnn.auto; our kernels: cuda.implicit_gemm, cuda.tensor_core --math tf32)")
    ap.add_argument("--channels-last", action="store_true", help="PyTorch in channels_last (ConvScope runs NCHW)")
    ap.add_argument("--timeout", type=int, default=240, help="seconds per run")
    ap.add_argument("--skip-torch", action="store_true")
    ap.add_argument("--skip-ours", action="store_true")
    args = ap.parse_args()
    if args.worker:
        return worker(args)
    counts = [int(c) for c in args.gpus.split(",")]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for impl in ("pytorch-ddp", "convscope"):
            if (impl == "pytorch-ddp" and args.skip_torch) or (impl == "convscope" and args.skip_ours):
                continue
            base = None
            for n in counts:
                if impl == "pytorch-ddp":
                    ms, err = run_torch(args, n)
                    comm = None
                else:
                    ms, comm, err = run_ours(args, n, tmp)
                if ms is None:
                    print(f"{impl} on {n} GPU(s) failed:\n{err}", file=sys.stderr)
                    rows.append((impl, n, None, None, None, "failed"))
                    continue
                if n == 1:
                    base = ms
                eff = base / ms if base else None
                rows.append((impl, n, ms, args.batch * n / ms * 1000, eff, comm or ""))
    what = ("DCGAN loop, 64², Adam" if args.model == "dcgan" else "ResNet-18, 224², SGD momentum")
    print(f"\n{what}, {args.batch} images per GPU, {args.math}, median of {args.steps} steps")
    print(f"{'implementation':<14} {'GPUs':>4} {'step ms':>9} {'img/s':>8} {'scaling':>8}  notes")
    for impl, n, ms, ips, eff, note in rows:
        if ms is None:
            print(f"{impl:<14} {n:>4} {'—':>9} {'—':>8} {'—':>8}  {note}")
            continue
        e = f"{100 * eff:.1f} %" if eff else "—"
        print(f"{impl:<14} {n:>4} {ms:>9.2f} {ips:>8.0f} {e:>8}  {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main() or 0)
