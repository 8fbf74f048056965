#!/usr/bin/env python3
"""Train resources/networks/lenet5.json on scikit-learn's handwritten digits (developer tool, not a build dependency).

The 8x8 digits (values 0..16) are scaled to 0..1 and upsampled bilinearly to 28x28, the input size of the LeNet-5
example. The split is scikit-learn's train_test_split with test_size=0.25 and random_state=0, so anyone gets the same
test digits. Writes <out>/lenet5_<layer>.weight.npy / .bias.npy (float32, PyTorch layouts) and the test split as
--test-out/digits_test_x.npy (N,1,28,28 float32) and digits_test_y.npy (N int64), writes the first test digit of each class (0..9) as <out>/digits_test_0to9.npy (10,1,28,28), and prints the
test accuracy.

    python3 -m venv venv && venv/bin/pip install torch scikit-learn
    venv/bin/python tools/train_lenet_digits.py --out resources/networks --seed 0
"""
import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split


class LeNet5(nn.Module):
    # Same layers as lenet5.json: conv(6,5x5,pad 2) relu maxpool conv(16,5x5) relu maxpool fc120 fc84 fc10.
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(1, 6, 5, padding=2)
        self.c3 = nn.Conv2d(6, 16, 5)
        self.f5 = nn.Linear(16 * 5 * 5, 120)
        self.f6 = nn.Linear(120, 84)
        self.f7 = nn.Linear(84, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c1(x)), 2)
        x = F.max_pool2d(F.relu(self.c3(x)), 2)
        x = torch.flatten(x, 1)
        x = F.relu(self.f5(x))
        x = F.relu(self.f6(x))
        return self.f7(x)


def digits_28():
    d = load_digits()
    x = torch.tensor(d.images / 16.0, dtype=torch.float32).unsqueeze(1)
    x = F.interpolate(x, size=(28, 28), mode="bilinear", align_corners=False)
    return x.numpy(), d.target.astype(np.int64)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--test-out", help="folder for the test split as digits_test_x.npy / digits_test_y.npy")
    args = ap.parse_args()
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    torch.set_num_threads(2)

    x, y = digits_28()
    xtr, xte, ytr, yte = train_test_split(x, y, test_size=0.25, random_state=0, stratify=y)
    xtr, ytr = torch.tensor(xtr), torch.tensor(ytr)
    xte_t, yte_t = torch.tensor(xte), torch.tensor(yte)

    net = LeNet5()
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    for epoch in range(args.epochs):
        net.train()
        perm = torch.randperm(len(xtr))
        for i in range(0, len(xtr), 32):
            idx = perm[i : i + 32]
            opt.zero_grad()
            loss = F.cross_entropy(net(xtr[idx]), ytr[idx])
            loss.backward()
            opt.step()
    net.eval()
    with torch.no_grad():
        acc = (net(xte_t).argmax(1) == yte_t).float().mean().item()
    print(f"test accuracy {acc * 100:.2f}% on {len(yte)} digits (seed {args.seed}, {args.epochs} epochs)")

    for name in ("c1", "c3", "f5", "f6", "f7"):
        layer = getattr(net, name)
        np.save(f"{args.out}/lenet5_{name}.weight.npy", layer.weight.detach().numpy().astype(np.float32))
        np.save(f"{args.out}/lenet5_{name}.bias.npy", layer.bias.detach().numpy().astype(np.float32))
    # The first test digit of each class, 0..9 in order: a small batch a class can feed to --input.
    first = [int(np.flatnonzero(yte == k)[0]) for k in range(10)]
    np.save(f"{args.out}/digits_test_0to9.npy", xte[first].astype(np.float32))
    if args.test_out:
        np.save(f"{args.test_out}/digits_test_x.npy", xte.astype(np.float32))
        np.save(f"{args.test_out}/digits_test_y.npy", yte)


if __name__ == "__main__":
    main()
