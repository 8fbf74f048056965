#!/usr/bin/env python3
"""Train resources/networks/autoencoder3d.json, the lecture's 3-D autoencoder (developer tool, not a dependency).

The data are ConvScope's own voxel samples (compute/voxel_samples.cpp, reproduced here voxel for voxel): a sphere, a
torus, a cube and a chair in a 32^3 grid, each drawn with a random scale (0.8-1.1), shift (up to 0.12 of the half
width on every axis) and, for the chair, random leg and back-rest heights, as ConvScope's `variant` seeds draw them.
The network is the one in the JSON (and in tools/torch_lecture_bench.py): conv3d 5^3 'same' with strides 2, 2, 4
and ReLU down to the 2x2x2x8 latent, then conv_transpose3d back to 32^3 with TensorFlow's SAME crops and tanh.
The loss is the mean squared error against the input volume (voxels 0 or 1). After training, interpolating between
two shapes' latents decodes to one shape morphing into the other, which is what the lecture shows.

Writes <out>/autoencoder3d_<layer>.weight.npy / .bias.npy (float32, PyTorch layouts: conv3d [out, in, 5, 5, 5],
conv_transpose3d [in, out, 5, 5, 5], which are ConvScope's) and prints the held-out reconstruction error (MSE and
voxel IoU at 0.5) per shape.

    /opt/torch/.venv/bin/python tools/train_autoencoder3d.py --out /tmp/ae --seed 0 --steps 4000
"""
import argparse
import math
import os

import numpy as np
import torch
import torch.nn.functional as F

from torch_lecture_bench import Decoder, Encoder

N = 32
SHAPES = ["sphere", "torus", "cube", "chair"]


def chair_boxes(leg, back):
    seat_low, seat_high, half, post = -0.1, 0.06, 0.6, 0.14
    boxes = [((-half, seat_low, -half), (half, seat_high, half)),
             ((-half, seat_high, half - post), (half, seat_high + back, half))]
    for x in (-half, half - post):
        for z in (-half, half - post):
            boxes.append(((x, seat_low - leg, z), (x + post, seat_low, z + post)))
    return boxes


def voxels(shape, scale=1.0, shift=(0.0, 0.0, 0.0), leg=0.72, back=0.78):
    """One volume [D, H, W] of 0/1, as compute/voxel_samples.cpp draws it (x: W, y: H bottom to top, z: D)."""
    c = (np.arange(N) + 0.5) / N * 2.0 - 1.0
    zd, yh, xw = np.meshgrid(c, c, c, indexing="ij")
    x = (xw - shift[0]) / scale
    y = (-yh - shift[1]) / scale
    z = (zd - shift[2]) / scale
    if shape == "sphere":
        inside = x * x + y * y + z * z <= 0.7 * 0.7
    elif shape == "torus":
        ring = np.sqrt(x * x + y * y) - 0.55
        inside = ring * ring + z * z <= 0.22 * 0.22
    elif shape == "cube":
        inside = np.maximum(np.maximum(np.abs(x), np.abs(y)), np.abs(z)) <= 0.55
    else:
        inside = np.zeros_like(x, dtype=bool)
        for lo, hi in chair_boxes(leg, back):
            inside |= ((x >= lo[0]) & (x <= hi[0]) & (y >= lo[1]) & (y <= hi[1]) & (z >= lo[2]) & (z <= hi[2]))
    return inside.astype(np.float32)


def random_volume(rng, shape):
    scale = rng.uniform(0.8, 1.1)
    shift = tuple(rng.uniform(-0.12, 0.12, 3))
    return voxels(shape, scale, shift, rng.uniform(0.45, 0.8), rng.uniform(0.4, 0.85))


def make_set(rng, count):
    labels = rng.integers(0, len(SHAPES), count)
    data = np.stack([random_volume(rng, SHAPES[k]) for k in labels])[:, None]
    return data, labels


def iou(pred, target):
    p, t = pred > 0.5, target > 0.5
    return float((p & t).sum()) / max(float((p | t).sum()), 1.0)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--steps", type=int, default=4000)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--train-size", type=int, default=4096)
    ap.add_argument("--lr", type=float, default=1e-3)
    a = ap.parse_args()

    rng = np.random.default_rng(a.seed)
    torch.manual_seed(a.seed)
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False

    # Every canonical shape (variant 0) is in the training set: the window interpolates between those.
    canonical = np.stack([voxels(s) for s in SHAPES])[:, None]
    train, _ = make_set(rng, a.train_size)
    train = np.concatenate([train, np.repeat(canonical, 64, axis=0)])
    test, test_labels = make_set(rng, 256)
    train_t = torch.from_numpy(train).to(dev)

    enc, dec = Encoder().to(dev), Decoder().to(dev)
    params = list(enc.parameters()) + list(dec.parameters())
    opt = torch.optim.Adam(params, lr=a.lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, a.steps)
    for step in range(a.steps):
        idx = torch.randint(0, train_t.shape[0], (a.batch,), device=dev)
        x = train_t[idx]
        loss = F.mse_loss(dec(enc(x)), x)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        if step % 500 == 0 or step == a.steps - 1:
            print(f"step {step}: train MSE {loss.item():.5f}", flush=True)

    enc.eval()
    dec.eval()
    with torch.no_grad():
        xt = torch.from_numpy(test).to(dev)
        yt = dec(enc(xt)).cpu().numpy()
        yc = dec(enc(torch.from_numpy(canonical).to(dev))).cpu().numpy()
        print(f"held-out (256 random shapes): MSE {np.mean((yt - test) ** 2):.5f}, "
              f"IoU {np.mean([iou(yt[i], test[i]) for i in range(len(test))]):.3f}")
        for k, s in enumerate(SHAPES):
            sel = test_labels == k
            print(f"  {s}: {int(sel.sum())} shapes, IoU {np.mean([iou(yt[i], test[i]) for i in np.where(sel)[0]]):.3f};"
                  f" canonical IoU {iou(yc[k], canonical[k]):.3f}")

    os.makedirs(a.out, exist_ok=True)
    names = ["enc1", "enc2", "enc3", "dec1", "dec2", "dec3"]
    layers = list(enc.convs) + list(dec.layers)
    for name, layer in zip(names, layers):
        np.save(os.path.join(a.out, f"autoencoder3d_{name}.weight.npy"),
                layer.weight.detach().cpu().numpy().astype(np.float32))
        np.save(os.path.join(a.out, f"autoencoder3d_{name}.bias.npy"),
                layer.bias.detach().cpu().numpy().astype(np.float32))
    print("wrote", ", ".join(f"autoencoder3d_{n}.{{weight,bias}}.npy" for n in names), "to", a.out)


if __name__ == "__main__":
    main()
