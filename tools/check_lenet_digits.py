#!/usr/bin/env python3
"""Compare ConvScope's LeNet-5 outputs on the digits test split with PyTorch's (developer tool).

    venv/bin/python tools/train_lenet_digits.py --out resources/networks --seed 0 --test-out /tmp/d
    convscope-cli run resources/networks/lenet5.json --input /tmp/d/digits_test_x.npy --reference none \
        --warmup 0 --repeat 1 --dump-outputs /tmp/d/out
    venv/bin/python tools/check_lenet_digits.py --networks resources/networks --test /tmp/d --dumped /tmp/d/out
"""
import argparse
import glob

import numpy as np
import torch

from train_lenet_digits import LeNet5


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--networks", required=True)
    ap.add_argument("--test", required=True)
    ap.add_argument("--dumped", required=True)
    args = ap.parse_args()
    net = LeNet5()
    for name in ("c1", "c3", "f5", "f6", "f7"):
        layer = getattr(net, name)
        layer.weight.data = torch.tensor(np.load(f"{args.networks}/lenet5_{name}.weight.npy"))
        layer.bias.data = torch.tensor(np.load(f"{args.networks}/lenet5_{name}.bias.npy"))
    x = np.load(f"{args.test}/digits_test_x.npy")
    y = np.load(f"{args.test}/digits_test_y.npy")
    with torch.no_grad():
        ref = torch.softmax(net(torch.tensor(x)), 1).numpy()
    ours = np.load(glob.glob(f"{args.dumped}/*_probabilities.npy")[0])
    print(f"max |ConvScope - PyTorch| over {len(y)} digits x 10 probabilities: {np.abs(ours - ref).max():.3g}")
    print(f"ConvScope test accuracy {(ours.argmax(1) == y).mean() * 100:.2f}%, "
          f"PyTorch {(ref.argmax(1) == y).mean() * 100:.2f}%, argmax agreement {(ours.argmax(1) == ref.argmax(1)).mean() * 100:.2f}%")


if __name__ == "__main__":
    main()
