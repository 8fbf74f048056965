#!/usr/bin/env python3
"""The autoencoder lecture's interpolation workload in PyTorch eager, for comparison with
`convscope-cli interpolate resources/networks/autoencoder3d.json --lecture --both` (developer tool, not a dependency).

Same network as autoencoder3d.json (conv3d 5x5x5 'same' strides 2, 2, 4 with ReLU to the 2x2x2x8 latent, then
conv_transpose3d back to 32^3 with TensorFlow's SAME crops and tanh; seeded weights, not ConvScope's), 50 inputs,
every ordered pair (or the first --pairs), 11 steps: the encoder runs once on all inputs, then each pair's blends
new_z = (1 - t) z1 + t z2 are decoded as one batch, or one step at a time. FP32 (TF32 off) on each --device; GPU
times are taken with torch.cuda.synchronize() around each decoder call, as a host pipeline would wait.

    venv/bin/python tools/torch_lecture_bench.py --device cpu --pairs 50
    /opt/torch/.venv/bin/python tools/torch_lecture_bench.py --device cuda
"""
import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Decoder(nn.Module):
    # (stride, crop before, crop after) per conv_transpose3d: TensorFlow's SAME crop of the full output.
    plan = [(8, 16, 4, 0, 1), (16, 32, 2, 1, 2), (32, 1, 2, 1, 2)]

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(nn.ConvTranspose3d(i, o, 5, stride=s) for i, o, s, _, _ in self.plan)

    def forward(self, z):
        for k, (layer, (_, _, _, a, b)) in enumerate(zip(self.layers, self.plan)):
            z = layer(z)
            d = z.shape[2]
            z = z[:, :, a:d - b, a:d - b, a:d - b]
            z = torch.tanh(z) if k == len(self.plan) - 1 else F.relu(z)
        return z


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.convs = nn.ModuleList([nn.Conv3d(1, 32, 5, stride=2), nn.Conv3d(32, 16, 5, stride=2),
                                    nn.Conv3d(16, 8, 5, stride=4)])

    def forward(self, x):
        for conv in self.convs:
            size, s = x.shape[2], conv.stride[0]
            out = -(-size // s)
            total = max((out - 1) * s + 5 - size, 0)
            a, b = total // 2, total - total // 2
            x = F.relu(conv(F.pad(x, (a, b, a, b, a, b))))
        return x


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", action="append", default=None, help="cpu, cuda (repeatable)")
    p.add_argument("--inputs", type=int, default=50)
    p.add_argument("--pairs", type=int, default=0, help="0: every ordered pair")
    p.add_argument("--steps", type=int, default=11)
    args = p.parse_args()
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(0)
    enc, dec = Encoder().eval(), Decoder().eval()
    x = (torch.rand(args.inputs, 1, 32, 32, 32) > 0.7).float()
    pairs = [(i, j) for i in range(args.inputs) for j in range(args.inputs) if i != j]
    if args.pairs > 0:
        pairs = pairs[:args.pairs]
    ts = torch.linspace(0, 1, args.steps).view(-1, 1, 1, 1, 1)
    print(f"{args.inputs} inputs, {len(pairs)} ordered pairs x {args.steps} steps = {len(pairs) * args.steps} "
          f"decoder runs; torch {torch.__version__}, {torch.get_num_threads()} CPU threads")
    print("device  encode ms  decode batched s  us/run  decode one by one s  us/run  batching speed-up")
    for name in args.device or ["cpu"]:
        device = torch.device(name)
        e, d, xd = enc.to(device), dec.to(device), x.to(device)
        with torch.no_grad():
            e(xd)
            sync(device)
            t0 = time.perf_counter()
            z = e(xd)
            sync(device)
            encode = time.perf_counter() - t0
            d(z[:1].repeat(args.steps, 1, 1, 1, 1))
            d(z[:1])
            sync(device)
            totals = []
            for one_by_one in (False, True):
                total = 0.0
                for i, j in pairs:
                    blend = (1 - ts.to(device)) * z[i:i + 1] + ts.to(device) * z[j:j + 1]
                    sync(device)
                    t0 = time.perf_counter()
                    if one_by_one:
                        for k in range(args.steps):
                            d(blend[k:k + 1])
                    else:
                        d(blend)
                    sync(device)
                    total += time.perf_counter() - t0
                totals.append(total)
        runs = len(pairs) * args.steps
        print(f"{name:6}  {encode * 1e3:9.2f}  {totals[0]:16.3f}  {totals[0] / runs * 1e6:6.1f}  {totals[1]:19.3f}  "
              f"{totals[1] / runs * 1e6:6.1f}  {totals[1] / totals[0]:.2f}x")


if __name__ == "__main__":
    main()
