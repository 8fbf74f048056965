#!/usr/bin/env python3
"""Writes the DCGAN step's PyTorch reference into tests/data/training/dcgan/ (issue 33: "one training step of the
DCGAN pair matches PyTorch's updated weights").

A small generator (a code [4, 8, 1, 1] → ConvTranspose 4×4 → BatchNorm → ReLU → ConvTranspose ×2 → Tanh: [4, 3, 8, 8])
and discriminator (Conv ×2 → LeakyReLU(0.2) → Conv ×2 → BatchNorm → LeakyReLU → Conv → Sigmoid: one score per image),
the DCGAN tutorial's layer pattern at toy size, trained for two steps exactly as the tutorial's loop does (nn.BCELoss
on the sigmoid; D on real and on the detached fake, gradients summed, Adam(lr, betas=(0.5, 0.999)); then G through
the updated D), in float64. Writes both network files with their float32 weights, real.npy, noise.npy, and the
parameters and batch-norm statistics after the two steps (after.<g|d>.<layer>.<param>.npy); reference.json holds the
losses. tests/training/gan_test.cpp runs `trainGan` on the same files and compares.

A developer tool: ConvScope and its tests never need PyTorch; the files are committed.

    /work/.venv-torch/bin/python tools/make_gan_reference.py [--out tests/data/training/dcgan]
"""
import argparse
import json
import os

import numpy as np
import torch
import torch.nn as nn

torch.set_default_dtype(torch.float64)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STEPS, LR, BETAS, BATCH, Z = 2, 2e-3, (0.5, 0.999), 4, 8


def f32(a):
    return np.asarray(a, dtype=np.float32)


def build(out, rng, prefix, spec, input_entry, name):
    """spec: list of (layer name, torch module, ConvScope entry). Draws float32 weights, writes the network file."""
    layers, files = [], {}
    for lname, module, entry in spec:
        entry = dict(entry, name=lname)
        if isinstance(module, (nn.Conv2d, nn.ConvTranspose2d)):
            w = f32(rng.uniform(-0.2, 0.2, tuple(module.weight.shape)))
            with torch.no_grad():
                module.weight.copy_(torch.from_numpy(w.astype(np.float64)))
            files[f"{prefix}.{lname}.weight.npy"] = w
            entry["init"] = {"kind": "file", "weight": f"{prefix}.{lname}.weight.npy"}
        elif isinstance(module, nn.BatchNorm2d):
            c = module.num_features
            vals = {"weight": rng.uniform(0.5, 1.5, c), "bias": rng.uniform(-0.2, 0.2, c),
                    "running_mean": rng.uniform(-0.1, 0.1, c), "running_var": rng.uniform(0.5, 1.5, c)}
            with torch.no_grad():
                for key, v in vals.items():
                    getattr(module, key).copy_(torch.from_numpy(f32(v).astype(np.float64)))
                    files[f"{prefix}.{lname}.{key}.npy"] = f32(v)
                    entry[key] = f"{prefix}.{lname}.{key}.npy"
        layers.append(entry)
    net = {"format": "convscope-network", "version": 1, "name": name, "input": input_entry, "layers": layers}
    with open(os.path.join(out, f"{prefix}.json"), "w") as f:
        json.dump(net, f, indent=1)
    for file, a in files.items():
        np.save(os.path.join(out, file), a)
    return nn.Sequential(*[m for _, m, _ in spec])


def conv_entry(kind, cout, k, s, p):
    return {"type": kind, "out_channels": cout, "kernel_size": [k, k], "stride": [s, s], "padding": [p, p, p, p],
            "bias": False}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "data", "training", "dcgan"))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rng = np.random.default_rng(7)
    g = build(a.out, rng, "generator", [
        ("g1", nn.ConvTranspose2d(Z, 16, 4, 1, 0, bias=False), conv_entry("conv_transpose2d", 16, 4, 1, 0)),
        ("g1_bn", nn.BatchNorm2d(16), {"type": "batchnorm2d"}),
        ("g1_relu", nn.ReLU(), {"type": "relu"}),
        ("g2", nn.ConvTranspose2d(16, 3, 4, 2, 1, bias=False), conv_entry("conv_transpose2d", 3, 4, 2, 1)),
        ("image", nn.Tanh(), {"type": "tanh"}),
    ], {"batch": BATCH, "channels": Z, "height": 1, "width": 1, "source": "random:1"}, "toy DCGAN generator")
    d = build(a.out, rng, "discriminator", [
        ("d1", nn.Conv2d(3, 8, 4, 2, 1, bias=False), conv_entry("conv2d", 8, 4, 2, 1)),
        ("d1_lrelu", nn.LeakyReLU(0.2), {"type": "leaky_relu", "negative_slope": 0.2}),
        ("d2", nn.Conv2d(8, 16, 4, 2, 1, bias=False), conv_entry("conv2d", 16, 4, 2, 1)),
        ("d2_bn", nn.BatchNorm2d(16), {"type": "batchnorm2d"}),
        ("d2_lrelu", nn.LeakyReLU(0.2), {"type": "leaky_relu", "negative_slope": 0.2}),
        ("d3", nn.Conv2d(16, 1, 2, 1, 0, bias=False), conv_entry("conv2d", 1, 2, 1, 0)),
        ("real_or_fake", nn.Sigmoid(), {"type": "sigmoid"}),
    ], {"batch": BATCH, "channels": 3, "height": 8, "width": 8, "source": "random:2"}, "toy DCGAN discriminator")
    real = f32(rng.uniform(-1, 1, (BATCH, 3, 8, 8)))
    noise = f32(rng.standard_normal((BATCH, Z, 1, 1)))
    np.save(os.path.join(a.out, "real.npy"), real)
    np.save(os.path.join(a.out, "noise.npy"), noise)

    g.train()
    d.train()
    opt_g = torch.optim.Adam(g.parameters(), lr=LR, betas=BETAS)
    opt_d = torch.optim.Adam(d.parameters(), lr=LR, betas=BETAS)
    bce = nn.BCELoss()
    x_real = torch.from_numpy(real.astype(np.float64))
    z = torch.from_numpy(noise.astype(np.float64))
    ones, zeros = torch.ones(BATCH), torch.zeros(BATCH)
    losses = []
    for _ in range(STEPS):  # the tutorial's loop
        d.zero_grad()
        err_real = bce(d(x_real).view(-1), ones)
        err_real.backward()
        fake = g(z)
        err_fake = bce(d(fake.detach()).view(-1), zeros)
        err_fake.backward()
        opt_d.step()
        g.zero_grad()
        err_g = bce(d(fake).view(-1), ones)
        err_g.backward()
        opt_g.step()
        losses.append({"loss_d": (err_real + err_fake).item(), "loss_g": err_g.item()})
    for prefix, net in (("generator", g), ("discriminator", d)):
        names = [n for n in json.load(open(os.path.join(a.out, f"{prefix}.json")))["layers"]]
        for entry, module in zip(names, net):
            for key in ("weight", "bias", "running_mean", "running_var"):
                t = getattr(module, key, None)
                if isinstance(t, torch.Tensor):
                    np.save(os.path.join(a.out, f"after.{prefix}.{entry['name']}.{key}.npy"), f32(t.detach().numpy()))
    with open(os.path.join(a.out, "reference.json"), "w") as f:
        json.dump({"generator": "tools/make_gan_reference.py", "torch": torch.__version__, "steps": STEPS, "lr": LR,
                   "betas": BETAS, "losses": losses}, f, indent=1)
    print(json.dumps(losses))


if __name__ == "__main__":
    main()
