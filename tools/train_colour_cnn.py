#!/usr/bin/env python3
"""Train resources/networks/colour_cnn.json on generated coloured shapes (developer tool, not a build dependency).

The data set is made here, so anyone gets the same pictures from the same seed: 64x64 RGB images in [0, 1], each a
red, green or blue circle, square or triangle (nine classes: colour x shape) on a textured background (stripes at
any angle, a checkerboard, smooth noise or a gradient, in two dull colours of any hue). The shape's hue is jittered
by up to 20 degrees, its size and place are random (squares and triangles stand upright), and pixel noise is added.
To tell the classes apart a network must find edges and corners (the shape) and saturated hues (the colour), which
is what its first layer learns: 5x5 colour kernels that look like oriented edges and colour-opponent blobs.

The network is small enough for the live preview: conv 3->16 (5x5, pad 2), relu, maxpool 2, then three times conv
(3x3, pad 1, 32 channels) and relu with a maxpool 2 after the first two, global average pool, flatten, linear 32->9,
softmax. Its last convolution sees 40x40 pixels, enough for a whole shape.

Writes <out>/colour_cnn_<layer>.weight.npy / .bias.npy (float32, PyTorch layouts), <out>/colour_shapes_test.npy
(the first test picture of each class, [9, 3, 64, 64], in class order), and prints the test accuracy.

    python3 -m venv venv && venv/bin/pip install torch numpy
    venv/bin/python tools/train_colour_cnn.py --out resources/networks --seed 0
"""
import argparse
import colorsys
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

SIZE = 64
COLOURS = [("red", 0.0), ("green", 120.0), ("blue", 240.0)]
SHAPES = ["circle", "square", "triangle"]
CLASSES = [f"{c} {s}" for c, _ in COLOURS for s in SHAPES]


class ColourCNN(nn.Module):
    # Same layers as colour_cnn.json.
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 5, padding=2)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.conv3 = nn.Conv2d(32, 32, 3, padding=1)
        self.conv4 = nn.Conv2d(32, 32, 3, padding=1)
        self.fc = nn.Linear(32, len(CLASSES))

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.max_pool2d(F.relu(self.conv3(x)), 2)
        x = F.relu(self.conv4(x))
        x = torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)
        return self.fc(x)


def hsv(h_deg, s, v):
    return np.array(colorsys.hsv_to_rgb((h_deg % 360.0) / 360.0, s, v), dtype=np.float32)


def background(rng):
    yy, xx = np.mgrid[0:SIZE, 0:SIZE].astype(np.float32)
    kind = rng.integers(4)
    if kind == 0:  # stripes at any angle and period
        a, period = rng.uniform(0, math.pi), rng.uniform(4, 16)
        t = 0.5 + 0.5 * np.sin(2 * math.pi * (xx * math.cos(a) + yy * math.sin(a)) / period)
    elif kind == 1:  # checkerboard
        cell = int(rng.integers(4, 12))
        t = ((xx // cell + yy // cell) % 2).astype(np.float32)
    elif kind == 2:  # smooth noise: coarse random grid, upsampled bilinearly
        g = torch.tensor(rng.random((1, 1, 6, 6)), dtype=torch.float32)
        t = F.interpolate(g, size=(SIZE, SIZE), mode="bilinear", align_corners=False)[0, 0].numpy()
    else:  # a gradient in any direction
        a = rng.uniform(0, 2 * math.pi)
        t = (xx * math.cos(a) + yy * math.sin(a)) / SIZE
        t = (t - t.min()) / (t.max() - t.min() + 1e-6)
    # Two dull colours of any hue: never as saturated as the shapes, so colour is the shape's, not the page's.
    c0 = hsv(rng.uniform(0, 360), rng.uniform(0, 0.45), rng.uniform(0.25, 0.9))
    c1 = hsv(rng.uniform(0, 360), rng.uniform(0, 0.45), rng.uniform(0.25, 0.9))
    return c0[:, None, None] * (1 - t)[None] + c1[:, None, None] * t[None]


def shape_mask(rng, shape):
    yy, xx = np.mgrid[0:SIZE, 0:SIZE].astype(np.float32) + 0.5
    r = rng.uniform(9, 20)
    cx, cy = rng.uniform(r + 2, SIZE - r - 2, size=2)
    if shape == "circle":
        return (xx - cx) ** 2 + (yy - cy) ** 2 <= r * r
    # Upright, unrotated: a square is horizontal and vertical edges, a triangle a flat base and two slanted sides, a
    # circle every orientation, so the first layer's oriented edge detectors tell the shapes apart. (Rotated shapes
    # need corner and curvature detectors; this small network then learnt only the colours, 50% test accuracy.)
    u, v = xx - cx, yy - cy
    if shape == "square":
        h = r / math.sqrt(2) * 1.2
        return (np.abs(u) <= h) & (np.abs(v) <= h)
    # An equilateral triangle inscribed in the circle of radius r: inside all three edges' half-planes.
    inside = np.ones_like(u, dtype=bool)
    for k in range(3):
        t = -math.pi / 2 + k * 2 * math.pi / 3  # vertex 0 at the top (rows grow downwards)
        nx, ny = math.cos(t + math.pi), math.sin(t + math.pi)  # inward normal of the edge opposite vertex k
        inside &= (u * nx + v * ny) <= r / 2
    return inside


def make_set(n, rng):
    x = np.empty((n, 3, SIZE, SIZE), dtype=np.float32)
    y = np.empty(n, dtype=np.int64)
    for i in range(n):
        label = int(rng.integers(len(CLASSES)))
        colour, shape = COLOURS[label // len(SHAPES)], SHAPES[label % len(SHAPES)]
        img = background(rng)
        mask = shape_mask(rng, shape)
        c = hsv(colour[1] + rng.uniform(-20, 20), rng.uniform(0.7, 1.0), rng.uniform(0.6, 1.0))
        img = np.where(mask[None], c[:, None, None], img)
        img = img + rng.normal(0, 0.03, img.shape).astype(np.float32)
        x[i] = np.clip(img, 0, 1)
        y[i] = label
    return x, y


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--epochs", type=int, default=15)
    ap.add_argument("--train", type=int, default=9000)
    ap.add_argument("--test", type=int, default=1800)
    args = ap.parse_args()
    torch.manual_seed(args.seed)
    torch.set_num_threads(2)
    rng = np.random.default_rng(args.seed)
    xtr, ytr = make_set(args.train, rng)
    xte, yte = make_set(args.test, rng)
    xtr_t, ytr_t = torch.tensor(xtr), torch.tensor(ytr)
    xte_t, yte_t = torch.tensor(xte), torch.tensor(yte)

    net = ColourCNN()
    # A little weight decay keeps the first-layer kernels smooth enough to read as edges and colour blobs.
    opt = torch.optim.Adam(net.parameters(), lr=2e-3, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.epochs)
    for epoch in range(args.epochs):
        net.train()
        perm = torch.randperm(len(xtr_t))
        total = 0.0
        for i in range(0, len(perm), 64):
            idx = perm[i : i + 64]
            opt.zero_grad()
            loss = F.cross_entropy(net(xtr_t[idx]), ytr_t[idx])
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
        sched.step()
        net.eval()
        with torch.no_grad():
            acc = (net(xte_t).argmax(1) == yte_t).float().mean().item()
        print(f"epoch {epoch + 1}: loss {total / len(perm):.4f}, test accuracy {acc * 100:.2f}%", flush=True)
    print(f"test accuracy {acc * 100:.2f}% on {len(yte)} generated pictures "
          f"(seed {args.seed}, {args.epochs} epochs, {len(ytr)} training pictures)")

    for name in ("conv1", "conv2", "conv3", "conv4", "fc"):
        layer = getattr(net, name)
        np.save(f"{args.out}/colour_cnn_{name}.weight.npy", layer.weight.detach().numpy().astype(np.float32))
        np.save(f"{args.out}/colour_cnn_{name}.bias.npy", layer.bias.detach().numpy().astype(np.float32))
    first = [int(np.flatnonzero(yte == k)[0]) for k in range(len(CLASSES))]
    np.save(f"{args.out}/colour_shapes_test.npy", xte[first])
    with torch.no_grad():
        probs = F.softmax(net(xte_t[first]), 1).numpy()
    for k, p in enumerate(probs):
        print(f"  test picture {k} ({CLASSES[k]}): predicted {CLASSES[int(p.argmax())]} ({p.max() * 100:.1f}%)")


if __name__ == "__main__":
    main()
