#!/usr/bin/env python3
"""Writes the training step's PyTorch reference cases into tests/data/training/ (issue 33).

A developer tool: ConvScope and its tests never need PyTorch; the files it writes are committed. Run it from the
repository root with a Python that has torch and numpy (e.g. /work/.venv-torch/bin/python):

    python tools/make_training_references.py [--out tests/data/training]

Each case is a folder with a ConvScope network file (network.json, its weights as .npy files beside it), input.npy,
target.npy, and PyTorch's float64 results of one training step (stored rounded to float32, to keep the files small) (torch.autograd, reduction='mean', torch.optim):
grad.input.npy and grad.<layer>.<weight|bias>.npy, and after.<layer>.<weight|bias|running_mean|running_var>.npy, the
parameters and batch-norm statistics after the optimizer's step. cases.json lists the cases with their loss and
optimizer. tests/training/torch_reference_test.cpp runs each case on cpu.direct and cpu.im2col_gemm and compares within
1e-5 relative L2. Inputs and weights are float32 values (what ConvScope holds), widened to float64 for PyTorch.
"""
import argparse
import json
import os
import shutil

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_default_dtype(torch.float64)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def f32(a):
    return np.asarray(a, dtype=np.float32)


class Case:
    """A network built layer by layer as a torch function and a ConvScope network file at once."""

    def __init__(self, name, input_shape, seed):
        self.name = name
        self.rng = np.random.default_rng(seed)
        self.input = f32(self.rng.uniform(-1, 1, input_shape))
        self.layers = []  # ConvScope layer entries
        self.modules = {}  # name -> torch module (parameters) or None
        self.graph = []  # (name, fn(inputs) -> tensor, input names)
        self.files = {}  # file name -> float32 array

    def add(self, name, entry, module, fn, inputs=None):
        entry = dict(entry, name=name)
        if inputs:
            entry["inputs"] = inputs
        self.layers.append(entry)
        self.modules[name] = module
        prev = self.layers[-2]["name"] if len(self.layers) > 1 else "input"
        self.graph.append((name, fn, inputs or [prev]))

    def weights(self, name, module, bias=True):
        """Random float32 weights for a module; returns the init entry that reads them."""
        with torch.no_grad():
            w = f32(self.rng.uniform(-0.5, 0.5, tuple(module.weight.shape)))
            module.weight.copy_(torch.from_numpy(w.astype(np.float64)))
            self.files[f"{name}.weight.npy"] = w
            init = {"kind": "file", "weight": f"{name}.weight.npy"}
            if bias and module.bias is not None:
                b = f32(self.rng.uniform(-0.5, 0.5, tuple(module.bias.shape)))
                module.bias.copy_(torch.from_numpy(b.astype(np.float64)))
                self.files[f"{name}.bias.npy"] = b
                init["bias"] = f"{name}.bias.npy"
        return init

    def conv(self, name, cin, cout, k, stride=1, padding=0, dilation=1, groups=1, bias=True, inputs=None):
        m = nn.Conv2d(cin, cout, k, stride, padding, dilation, groups, bias)
        pair = lambda v: list(v) if isinstance(v, tuple) else [v, v]
        p = pair(padding)
        entry = {"type": "conv2d", "out_channels": cout, "kernel_size": pair(k), "stride": pair(stride),
                 "padding": [p[0], p[0], p[1], p[1]], "dilation": pair(dilation), "groups": groups, "bias": bias,
                 "init": self.weights(name, m, bias)}
        self.add(name, entry, m, lambda xs: m(xs[0]), inputs)

    def simple(self, name, entry, fn, inputs=None):
        self.add(name, entry, None, fn, inputs)

    def forward(self, x):
        values = {"input": x}
        for name, fn, inputs in self.graph:
            values[name] = fn([values[i] for i in inputs])
        return values[self.graph[-1][0]]


def write_case(out_dir, case, loss, optimizer, target=None, lr=0.1, momentum=0.0, weight_decay=0.0):
    folder = os.path.join(out_dir, case.name)
    os.makedirs(folder, exist_ok=True)
    c = case.input.shape
    inp = {"batch": c[0], "channels": c[1], "source": "input.npy"}
    if len(c) == 5:
        inp.update(depth=c[2], height=c[3], width=c[4])
    elif len(c) == 2:
        inp["features"] = inp.pop("channels")
    else:
        inp.update(height=c[2], width=c[3])
    net = {"format": "convscope-network", "version": 1, "name": case.name, "input": inp, "layers": case.layers}
    with open(os.path.join(folder, "network.json"), "w") as f:
        json.dump(net, f, indent=1)
    for file, a in case.files.items():
        np.save(os.path.join(folder, file), a)
    np.save(os.path.join(folder, "input.npy"), case.input)

    x = torch.from_numpy(case.input.astype(np.float64)).requires_grad_(True)
    for m in case.modules.values():
        if m is not None:
            m.train()
    out = case.forward(x)
    if target is None:
        if loss == "ce":
            target = f32(case.rng.integers(0, out.shape[1], out.shape[0]))
        elif loss == "bce":
            target = f32(case.rng.uniform(0, 1, tuple(out.shape)))
        else:
            target = f32(case.rng.uniform(-1, 1, tuple(out.shape)))
    np.save(os.path.join(folder, "target.npy"), target)
    t = torch.from_numpy(target.astype(np.float64))
    if loss == "ce":
        value = F.cross_entropy(out, t.long())
    elif loss == "mse":
        value = F.mse_loss(out, t)
    else:
        value = F.binary_cross_entropy_with_logits(out, t)
    params = [p for m in case.modules.values() if m is not None for p in m.parameters()]
    if optimizer == "sgd":
        opt = torch.optim.SGD(params, lr=lr, momentum=momentum, weight_decay=weight_decay)
    else:
        opt = torch.optim.Adam(params, lr=lr, weight_decay=weight_decay)
    opt.zero_grad()
    value.backward()
    np.save(os.path.join(folder, "grad.input.npy"), f32(x.grad.numpy()))
    for name, m in case.modules.items():
        if m is None:
            continue
        for pname, p in m.named_parameters():
            np.save(os.path.join(folder, f"grad.{name}.{pname}.npy"), f32(p.grad.numpy()))
    opt.step()
    for name, m in case.modules.items():
        if m is None:
            continue
        for pname, p in m.named_parameters():
            np.save(os.path.join(folder, f"after.{name}.{pname}.npy"), f32(p.detach().numpy()))
        if isinstance(m, (nn.BatchNorm2d, nn.BatchNorm3d)):
            np.save(os.path.join(folder, f"after.{name}.running_mean.npy"), f32(m.running_mean.numpy()))
            np.save(os.path.join(folder, f"after.{name}.running_var.npy"), f32(m.running_var.numpy()))
    return {"name": case.name, "loss": loss, "optimizer": optimizer, "lr": lr, "momentum": momentum,
            "weight_decay": weight_decay, "loss_value": value.detach().item()}


def batchnorm(case, name, channels, affine=True):
    m = nn.BatchNorm2d(channels, affine=affine)
    entry = {"type": "batchnorm2d", "affine": affine, "eps": 1e-5}
    with torch.no_grad():
        mean = f32(case.rng.uniform(-0.2, 0.2, channels))
        var = f32(case.rng.uniform(0.5, 1.5, channels))
        m.running_mean.copy_(torch.from_numpy(mean.astype(np.float64)))
        m.running_var.copy_(torch.from_numpy(var.astype(np.float64)))
        case.files[f"{name}.running_mean.npy"] = mean
        case.files[f"{name}.running_var.npy"] = var
        entry.update(running_mean=f"{name}.running_mean.npy", running_var=f"{name}.running_var.npy")
        if affine:
            for key in ("weight", "bias"):
                v = f32(case.rng.uniform(0.5, 1.5, channels) if key == "weight" else case.rng.uniform(-.3, .3, channels))
                getattr(m, key).copy_(torch.from_numpy(v.astype(np.float64)))
                case.files[f"{name}.{key}.npy"] = v
                entry[key] = f"{name}.{key}.npy"
    case.add(name, entry, m, lambda xs: m(xs[0]))


def make_cases(out_dir):
    cases = []
    c = Case("conv_groups_dilation", (2, 4, 9, 8), 1)
    c.conv("c1", 4, 6, (3, 2), stride=(2, 1), padding=(1, 2), dilation=(2, 1), groups=2)
    c.simple("act", {"type": "tanh"}, lambda xs: torch.tanh(xs[0]))
    c.conv("c2", 6, 3, 3, stride=2, padding=1, bias=False)
    cases.append(write_case(out_dir, c, "mse", "sgd", lr=0.1, momentum=0.9, weight_decay=0.01))

    c = Case("conv_transpose", (2, 4, 4, 5), 2)
    m = nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2)
    c.add("up", {"type": "conv_transpose2d", "out_channels": 6, "kernel_size": [3, 3], "stride": [2, 2],
                 "padding": [1, 1, 1, 1], "output_padding": [1, 1], "dilation": [1, 1], "groups": 2,
                 "init": c.weights("up", m)}, m, lambda xs, m=m: m(xs[0]))
    m2 = nn.ConvTranspose2d(6, 2, (2, 3), stride=(1, 2), padding=(0, 1), output_padding=(0, 1), dilation=(2, 1))
    c.add("up2", {"type": "conv_transpose2d", "out_channels": 2, "kernel_size": [2, 3], "stride": [1, 2],
                  "padding": [0, 0, 1, 1], "output_padding": [0, 1], "dilation": [2, 1],
                  "init": c.weights("up2", m2)}, m2, lambda xs, m=m2: m(xs[0]))
    cases.append(write_case(out_dir, c, "mse", "adam", lr=0.01))

    c = Case("batchnorm", (3, 3, 5, 4), 3)
    c.conv("c1", 3, 4, 3, padding=1)
    batchnorm(c, "bn1", 4)
    c.simple("act", {"type": "relu"}, lambda xs: F.relu(xs[0]))
    c.conv("c2", 4, 4, 1)
    batchnorm(c, "bn2", 4, affine=False)
    cases.append(write_case(out_dir, c, "mse", "sgd", lr=0.1, momentum=0.9))

    acts = [("relu", {}, F.relu), ("leaky_relu", {"negative_slope": 0.2}, lambda x: F.leaky_relu(x, 0.2)),
            ("sigmoid", {}, torch.sigmoid), ("tanh", {}, torch.tanh), ("elu", {"alpha": 0.7}, lambda x: F.elu(x, 0.7)),
            ("relu6", {}, F.relu6), ("hardswish", {}, F.hardswish), ("hardsigmoid", {}, F.hardsigmoid),
            ("silu", {}, F.silu), ("hardtanh", {"min_val": -0.5, "max_val": 2.0}, lambda x: F.hardtanh(x, -0.5, 2.0))]
    c = Case("activations", (2, 3, 5, 5), 4)
    c.conv("c0", 3, 4, 3, padding=1)
    for i, (kind, params, fn) in enumerate(acts):
        c.simple(f"a{i}_{kind}", dict({"type": kind}, **params), lambda xs, fn=fn: fn(xs[0]))
        c.conv(f"s{i}", 4, 4, 1)  # a 1×1 mix between activations, so each sees values on both sides of its bends
    pm = nn.PReLU(4)
    c.add("prelu", {"type": "prelu", "num_parameters": 4, "init": c.weights("prelu", pm, bias=False)}, pm,
          lambda xs: pm(xs[0]))
    cases.append(write_case(out_dir, c, "mse", "sgd", lr=0.05))

    c = Case("pools", (2, 3, 9, 8), 5)
    c.conv("c1", 3, 4, 3, padding=1)
    c.simple("mp", {"type": "maxpool2d", "kernel_size": [3, 3], "stride": [2, 2], "padding": [1, 1, 1, 1],
                    "dilation": [1, 1], "ceil_mode": True},
             lambda xs: F.max_pool2d(xs[0], 3, 2, 1, ceil_mode=True))
    c.conv("c2", 4, 4, 1)
    c.simple("mpd", {"type": "maxpool2d", "kernel_size": [2, 2], "stride": [1, 1], "padding": [0, 0, 0, 0],
                     "dilation": [2, 2]}, lambda xs: F.max_pool2d(xs[0], 2, 1, 0, dilation=2))
    c.simple("ap", {"type": "avgpool2d", "kernel_size": [3, 2], "stride": [1, 2], "padding": [1, 1, 1, 1],
                    "ceil_mode": True, "count_include_pad": False},
             lambda xs: F.avg_pool2d(xs[0], (3, 2), (1, 2), 1, ceil_mode=True, count_include_pad=False))
    c.simple("ap2", {"type": "avgpool2d", "kernel_size": [2, 2], "stride": [1, 1], "divisor_override": 3},
             lambda xs: F.avg_pool2d(xs[0], 2, 1, divisor_override=3))
    c.simple("gap", {"type": "global_avgpool2d"}, lambda xs: F.adaptive_avg_pool2d(xs[0], 1))
    c.simple("flat", {"type": "flatten"}, lambda xs: torch.flatten(xs[0], 1))
    lin = nn.Linear(4, 5)
    c.add("fc", {"type": "linear", "out_features": 5, "init": c.weights("fc", lin)}, lin, lambda xs: lin(xs[0]))
    cases.append(write_case(out_dir, c, "ce", "sgd", lr=0.1))

    c = Case("graph_merges", (2, 3, 6, 6), 6)
    c.conv("c1", 3, 4, 3, padding=1)
    c.simple("act", {"type": "tanh"}, lambda xs: torch.tanh(xs[0]))
    c.simple("res", {"type": "add"}, lambda xs: xs[0] + xs[1], inputs=["act", "c1"])
    c.simple("gap", {"type": "global_avgpool2d"}, lambda xs: F.adaptive_avg_pool2d(xs[0], 1), inputs=["c1"])
    c.simple("gate", {"type": "sigmoid"}, lambda xs: torch.sigmoid(xs[0]))
    c.simple("mul", {"type": "mul"}, lambda xs: xs[0] * xs[1], inputs=["res", "gate"])
    c.simple("cat", {"type": "concat"}, lambda xs: torch.cat(xs, 1), inputs=["mul", "c1"])
    c.simple("pr", {"type": "pad", "padding": [1, 2, 2, 1], "mode": "reflect"},
             lambda xs: F.pad(xs[0], (2, 1, 1, 2), mode="reflect"))
    c.simple("pe", {"type": "pad", "padding": [1, 0, 0, 2], "mode": "replicate"},
             lambda xs: F.pad(xs[0], (0, 2, 1, 0), mode="replicate"))
    c.simple("pc", {"type": "pad", "padding": [0, 1, 1, 0], "mode": "constant", "value": 0.5},
             lambda xs: F.pad(xs[0], (1, 0, 0, 1), mode="constant", value=0.5))
    c.conv("c2", 8, 2, 3, stride=2)
    c.simple("flat", {"type": "flatten"}, lambda xs: torch.flatten(xs[0], 1))
    lin = nn.Linear(2 * 5 * 5, 3)
    c.add("fc", {"type": "linear", "out_features": 3, "init": c.weights("fc", lin)}, lin, lambda xs: lin(xs[0]))
    cases.append(write_case(out_dir, c, "bce", "adam", lr=0.01, weight_decay=0.001))

    c = Case("volumes", (2, 2, 5, 4, 6), 9)
    # No bias before batch norm: its gradient is zero but for rounding, which Adam's m / sqrt(v) would amplify.
    m = nn.Conv3d(2, 4, (3, 2, 3), stride=(1, 2, 1), padding=(1, 0, 1), dilation=(1, 1, 2), groups=2, bias=False)
    c.add("c1", {"type": "conv3d", "out_channels": 4, "kernel_size": [3, 2, 3], "stride": [1, 2, 1],
                 "padding": [1, 1, 0, 0, 1, 1], "dilation": [1, 1, 2], "groups": 2, "bias": False,
                 "init": c.weights("c1", m, bias=False)},
          m, lambda xs, m=m: m(xs[0]))
    bn3 = nn.BatchNorm3d(4)
    with torch.no_grad():
        for key in ("weight", "bias"):
            v = f32(c.rng.uniform(0.5, 1.5, 4))
            getattr(bn3, key).copy_(torch.from_numpy(v.astype(np.float64)))
            c.files[f"bn.{key}.npy"] = v
    c.add("bn", {"type": "batchnorm3d", "weight": "bn.weight.npy", "bias": "bn.bias.npy"}, bn3,
          lambda xs: bn3(xs[0]))
    c.simple("act", {"type": "elu"}, lambda xs: F.elu(xs[0]))
    c.simple("mp", {"type": "maxpool3d", "kernel_size": [2, 2, 2], "stride": [1, 1, 2], "padding": [1, 1, 0, 0, 1, 1],
                    "ceil_mode": True}, lambda xs: F.max_pool3d(xs[0], 2, (1, 1, 2), (1, 0, 1), ceil_mode=True))
    up = nn.ConvTranspose3d(4, 2, 2, stride=2, padding=(0, 0, 1), output_padding=(1, 0, 0), groups=2)
    c.add("up", {"type": "conv_transpose3d", "out_channels": 2, "kernel_size": [2, 2, 2], "stride": [2, 2, 2],
                 "padding": [0, 0, 0, 0, 1, 1], "output_padding": [1, 0, 0], "groups": 2, "init": c.weights("up", up)},
          up, lambda xs: up(xs[0]))
    c.simple("ap", {"type": "avgpool3d", "kernel_size": [2, 2, 2], "stride": [2, 1, 2], "padding": [1, 1, 1, 1, 0, 0],
                    "count_include_pad": False},
             lambda xs: F.avg_pool3d(xs[0], (2, 2, 2), (2, 1, 2), (1, 1, 0), count_include_pad=False))
    c.simple("gap", {"type": "global_avgpool3d"}, lambda xs: F.adaptive_avg_pool3d(xs[0], 1))
    cases.append(write_case(out_dir, c, "mse", "adam", lr=0.01))

    # A ResNet basic block with a downsampling shortcut (ResNet-18's layer2.0, scaled down): conv-bn-relu-conv-bn plus
    # a 1×1 stride-2 conv-bn shortcut, the sum, relu, global pooling and the classifier; SGD with momentum and decay.
    c = Case("resnet_block", (4, 4, 8, 8), 10)
    c.conv("stem", 4, 8, 3, padding=1, bias=False)
    batchnorm(c, "stem_bn", 8)
    c.simple("stem_relu", {"type": "relu"}, lambda xs: F.relu(xs[0]))
    c.conv("b_conv1", 8, 16, 3, stride=2, padding=1, bias=False)
    batchnorm(c, "b_bn1", 16)
    c.simple("b_relu1", {"type": "relu"}, lambda xs: F.relu(xs[0]))
    c.conv("b_conv2", 16, 16, 3, padding=1, bias=False)
    batchnorm(c, "b_bn2", 16)
    c.conv("down", 8, 16, 1, stride=2, bias=False, inputs=["stem_relu"])
    batchnorm(c, "down_bn", 16)
    c.simple("sum", {"type": "add"}, lambda xs: xs[0] + xs[1], inputs=["b_bn2", "down_bn"])
    c.simple("relu", {"type": "relu"}, lambda xs: F.relu(xs[0]))
    c.simple("gap", {"type": "global_avgpool2d"}, lambda xs: F.adaptive_avg_pool2d(xs[0], 1))
    c.simple("flat", {"type": "flatten"}, lambda xs: torch.flatten(xs[0], 1))
    lin = nn.Linear(16, 5)
    c.add("fc", {"type": "linear", "out_features": 5, "init": c.weights("fc", lin)}, lin, lambda xs: lin(xs[0]))
    cases.append(write_case(out_dir, c, "ce", "sgd", lr=0.1, momentum=0.9, weight_decay=5e-4))

    # The normalization kinds (issue 30): InstanceNorm with affine, GroupNorm, LayerNorm over the last two axes, over the
    # last without bias, InstanceNorm without affine; Adam. A per-channel scale or shift is normalised away by a later
    # norm over that channel's positions (its gradient would be rounding noise, which Adam amplifies), so a tanh and a
    # 1×1 convolution without bias mix the channels between them.
    c = Case("norms", (2, 4, 3, 5), 11)
    c.conv("c1", 4, 4, 1, bias=False)
    inorm = nn.InstanceNorm2d(4, affine=True)
    c.add("in", {"type": "instance_norm", "affine": True, "init": c.weights("in", inorm)}, inorm,
          lambda xs: inorm(xs[0]))
    c.simple("t1", {"type": "tanh"}, lambda xs: torch.tanh(xs[0]))
    c.conv("c2", 4, 4, 1, bias=False)
    gn = nn.GroupNorm(2, 4, eps=1e-3)
    c.add("gn", {"type": "group_norm", "num_groups": 2, "eps": 1e-3, "init": c.weights("gn", gn)}, gn,
          lambda xs: gn(xs[0]))
    c.simple("t2", {"type": "tanh"}, lambda xs: torch.tanh(xs[0]))
    c.conv("c3", 4, 4, 1, bias=False)
    ln = nn.LayerNorm([3, 5])
    c.add("ln", {"type": "layer_norm", "normalized_shape": [3, 5], "init": c.weights("ln", ln)}, ln,
          lambda xs: ln(xs[0]))
    c.simple("t3", {"type": "tanh"}, lambda xs: torch.tanh(xs[0]))
    ln2 = nn.LayerNorm(5, bias=False)
    c.add("ln2", {"type": "layer_norm", "normalized_shape": [5], "bias": False, "init": c.weights("ln2", ln2)}, ln2,
          lambda xs: ln2(xs[0]))
    c.simple("in2", {"type": "instance_norm"}, lambda xs: F.instance_norm(xs[0]))
    cases.append(write_case(out_dir, c, "mse", "adam", lr=0.01))

    c = Case("softmax_linear", (4, 7), 7)
    lin = nn.Linear(7, 6)
    c.add("fc", {"type": "linear", "out_features": 6, "init": c.weights("fc", lin)}, lin, lambda xs: lin(xs[0]))
    c.simple("sm", {"type": "softmax"}, lambda xs: F.softmax(xs[0], 1))
    cases.append(write_case(out_dir, c, "ce", "sgd", lr=0.5))

    # softmax, log_softmax and reduce along other axes than 1 (issue 30): log_softmax over H, an L2 norm over the
    # channels (keepdim), softmax over W, the max over H (ties impossible with random data), and a classifier.
    c = Case("softmax_axes", (2, 3, 4, 5), 12)
    c.conv("mix", 3, 4, 1, bias=False)  # a bias per channel is constant along H: log_softmax cancels it
    c.simple("lsm", {"type": "log_softmax", "dim": 2}, lambda xs: F.log_softmax(xs[0], 2))
    c.simple("norm", {"type": "reduce", "op": "l2", "dim": [1], "keepdim": True},
             lambda xs: torch.linalg.vector_norm(xs[0], 2, (1,), keepdim=True))
    c.simple("sm", {"type": "softmax", "dim": -1}, lambda xs: F.softmax(xs[0], -1))
    c.simple("peak", {"type": "reduce", "op": "max", "dim": [2]}, lambda xs: xs[0].amax((2,)))
    c.simple("flat", {"type": "flatten"}, lambda xs: torch.flatten(xs[0], 1))
    lin = nn.Linear(5, 3)
    c.add("fc", {"type": "linear", "out_features": 3, "init": c.weights("fc", lin)}, lin, lambda xs: lin(xs[0]))
    cases.append(write_case(out_dir, c, "mse", "adam", lr=0.01))
    return cases


def lenet_case(out_dir):
    """One SGD step (momentum, weight decay) of the trained LeNet-5 (resources/networks/lenet5_trained.json) on its ten
    test digits, the loss on the logits (the file's final softmax left out)."""
    src = os.path.join(ROOT, "resources", "networks")
    with open(os.path.join(src, "lenet5_trained.json")) as f:
        net = json.load(f)
    c = Case("lenet5_sgd", (1, 1, 28, 28), 8)
    c.input = f32(np.load(os.path.join(src, "digits_test_0to9.npy")))  # one test digit of each class, in order
    for layer in net["layers"]:
        entry = {k: v for k, v in layer.items() if k not in ("init",)}
        kind = layer["type"]
        name = layer["name"]
        if kind in ("conv2d", "linear"):
            init = layer["init"]
            w = np.load(os.path.join(src, init["weight"]))
            b = np.load(os.path.join(src, init["bias"]))
            if kind == "conv2d":
                m = nn.Conv2d(w.shape[1], w.shape[0], tuple(layer["kernel_size"]), tuple(layer["stride"]),
                              (layer["padding"][0], layer["padding"][2]))
            else:
                m = nn.Linear(w.shape[1], w.shape[0])
            with torch.no_grad():
                m.weight.copy_(torch.from_numpy(w.astype(np.float64)))
                m.bias.copy_(torch.from_numpy(b.astype(np.float64)))
            entry["init"] = {"kind": "file", "weight": "../../../../resources/networks/" + init["weight"],
                             "bias": "../../../../resources/networks/" + init["bias"]}
            c.add(name, entry, m, lambda xs, m=m: m(xs[0]))
        elif kind == "relu":
            c.simple(name, entry, lambda xs: F.relu(xs[0]))
        elif kind == "maxpool2d":
            c.simple(name, entry, lambda xs, k=layer["kernel_size"], s=layer["stride"]: F.max_pool2d(xs[0], k, s))
        elif kind == "flatten":
            c.simple(name, entry, lambda xs: torch.flatten(xs[0], 1))
        elif kind == "softmax":
            pass  # the loss takes logits: train the network up to its last linear layer
        else:
            raise SystemExit(f"lenet5_trained.json: unexpected layer type {kind}")
    target = f32(np.arange(c.input.shape[0]))
    return write_case(out_dir, c, "ce", "sgd", target=target, lr=0.05, momentum=0.9, weight_decay=1e-4)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "data", "training"))
    args = ap.parse_args()
    shutil.rmtree(args.out, ignore_errors=True)
    os.makedirs(args.out)
    cases = make_cases(args.out) + [lenet_case(args.out)]
    with open(os.path.join(args.out, "cases.json"), "w") as f:
        json.dump({"generator": "tools/make_training_references.py", "torch": torch.__version__, "cases": cases}, f,
                  indent=1)
    total = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(args.out) for f in fs)
    print(f"{len(cases)} cases, {total / 1024:.0f} KiB in {args.out}")


if __name__ == "__main__":
    main()
