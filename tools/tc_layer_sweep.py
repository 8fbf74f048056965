#!/usr/bin/env python3
"""Times one layer of a network on every Tensor Core tile and split asked for, beside cuDNN, in one call.

The plan's rules (kernels/cuda/conv2d_tensor_core_plan.h) were chosen from sweeps like this one: each cell is a
`convscope-cli run` of the network with `--option tc_tile=T --option tc_split=S`, the layer's median time read from
its CSV report, and the note says which kernel ran (a tile the layer refuses falls back; the note then names the
kernel that ran instead). The row "default" is the plan's own choice, and cuDNN's time is from the same call.

    tools/tc_layer_sweep.py --cli build-gpu/bin/convscope-cli --net tools/networks/last_stage7.json \
        --maths fp16,tf32 --tiles wg128x128,wg128x256 --splits 3,4,5,6

Standard library only: it runs on the GPU machine as it is, never in CI.
"""
import argparse
import csv
import os
import subprocess
import sys
import tempfile


def layer_row(report, layer, selection):
    with open(report, newline="") as f:
        for row in csv.DictReader(f):
            if row["layer_name"] == layer and row["selection"] == selection:
                return row
    return None


def run(args, math, backends, options, report):
    cmd = [args.cli, "run", args.net, "--backends", backends, "--reference", "none", "--math", math,
           "--warmup", str(args.warmup), "--repeat", str(args.repeat), "--report", report]
    if args.batch:
        cmd += ["--batch", str(args.batch)]
    for o in options:
        cmd += ["--option", o]
    done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=args.timeout)
    if done.returncode != 0:
        return None, done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"
    return report, ""


def kernel_of(note):
    # The part of the layer note that names the kernel and tile (after the fusion sentences).
    for key in ("wgmma", "mma.sync", "stem"):
        at = note.find(key)
        if at >= 0:
            return note[at:at + 90]
    return note[:90]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cli", required=True, help="convscope-cli built with CUDA")
    p.add_argument("--net", required=True, help="the network (tools/networks/last_stage7.json, ...)")
    p.add_argument("--layer", default="conv", help="the layer to time (default: conv)")
    p.add_argument("--batch", type=int, default=0, help="batch (default: the network's)")
    p.add_argument("--maths", default="fp16,tf32")
    p.add_argument("--tiles", default="wg128x128,wg128x128r64,wg128x256,tma128x64,tma128x128")
    p.add_argument("--splits", default="1,2,3,4,5,6")
    p.add_argument("--ours", default="cuda.tensor_core+fused", help="the selection the options apply to")
    p.add_argument("--vendor", default="cudnn.auto+fused", help="the baseline timed in the default row")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--timeout", type=int, default=120, help="seconds a run may take")
    args = p.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "layer.csv")
        for math in args.maths.split(","):
            print(f"\n{os.path.basename(args.net)}, layer {args.layer}, {math} (median µs of {args.repeat})")
            print("| tile | split | µs | kernel that ran |")
            print("|---|---:|---:|---|")
            got, why = run(args, math, f"{args.vendor},{args.ours}", [], report)
            if got:
                ours = layer_row(report, args.layer, args.ours)
                vendor = layer_row(report, args.layer, args.vendor)
                for name, row in (("default", ours), (args.vendor, vendor)):
                    if row:
                        print(f"| {name} | | {float(row['median_ms']) * 1000:.1f} | {kernel_of(row['note'])} |")
            else:
                print(f"| default | | failed | {why} |")
            for tile in args.tiles.split(","):
                for split in args.splits.split(","):
                    got, why = run(args, math, args.ours, [f"tc_tile={tile}", f"tc_split={split}"], report)
                    row = layer_row(report, args.layer, args.ours) if got else None
                    if row:
                        print(f"| {tile} | {split} | {float(row['median_ms']) * 1000:.1f} | {kernel_of(row['note'])} |")
                    else:
                        print(f"| {tile} | {split} | failed | {why or 'no such layer in the report'} |")
                    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
