#!/usr/bin/env python3
"""Checks convscope-cli against PyTorch on random networks (a developer tool; ConvScope never needs PyTorch).

For each case it writes a network JSON whose weights and input are .npy files, runs
`convscope-cli run --dump-outputs`, and compares every layer's output with torch.nn.functional evaluated in
float64 on the same float32 data. Passes when every layer's relative L2 error is <= the tolerance.
Networks are graphs: besides chains of every single-input kind (relu6, hardswish, hardsigmoid, silu, pad in its three
modes, resize as F.interpolate's nearest, nearest-exact, bilinear and bicubic, identity and dropout, layer_norm,
group_norm and instance_norm included), layers read earlier layers by name through add (2 or 3 inputs), mul (same
shape, or a global-average-pool → sigmoid gate broadcast as squeeze-and-excitation does) and concat.

    python3 tools/pytorch_reference_check.py --cli build/dev/bin/convscope-cli --cases 200 [--backends cuda.tiled]
"""
import argparse, json, os, random, subprocess, sys, tempfile

import numpy as np
import torch
import torch.nn.functional as F


def same_pad(size, k, s, d):
    out = (size + s - 1) // s
    total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
    return total // 2, total - total // 2


class Case:
    def __init__(self, rng, folder):
        self.rng, self.folder, self.layers, self.files = rng, folder, [], 0

    def save(self, array):
        self.files += 1
        name = f"p{self.files}.npy"
        np.save(os.path.join(self.folder, name), array.astype(np.float32))
        return name

    def rand(self, *shape, scale=1.0):
        return (np.random.default_rng(self.rng.randrange(1 << 30)).uniform(-1, 1, shape) * scale).astype(np.float32)


def conv_case(c, x, rng):
    n, cin, h, w = x.shape
    groups = rng.choice([g for g in (1, 2, 3, 4, cin) if cin % g == 0])
    cout = groups * rng.randint(1, 4)
    kh, kw = rng.randint(1, 5), rng.randint(1, 5)
    sh, sw = rng.randint(1, 3), rng.randint(1, 3)
    dh, dw = rng.randint(1, 3), rng.randint(1, 2)
    mode = rng.choice(["sym", "asym", "same", "valid"])
    if mode == "sym":
        pt = pb = rng.randint(0, 3); pl = pr = rng.randint(0, 3)
    elif mode == "asym":
        pt, pb, pl, pr = (rng.randint(0, 3) for _ in range(4))
    elif mode == "same":
        pt, pb = same_pad(h, kh, sh, dh); pl, pr = same_pad(w, kw, sw, dw)
    else:
        pt = pb = pl = pr = 0
    if h + pt + pb < dh * (kh - 1) + 1 or w + pl + pr < dw * (kw - 1) + 1:
        return None
    bias = rng.random() < 0.7
    wt = c.rand(cout, cin // groups, kh, kw, scale=0.5)
    b = c.rand(cout) if bias else None
    layer = {"type": "conv2d", "out_channels": cout, "kernel_size": [kh, kw], "stride": [sh, sw],
             "padding": mode if mode in ("same", "valid") else [pt, pb, pl, pr], "dilation": [dh, dw],
             "groups": groups, "bias": bias, "init": {"weight": c.save(wt)}}
    if bias:
        layer["init"]["bias"] = c.save(b)
    def f(t):
        t = F.pad(t, (pl, pr, pt, pb))
        return F.conv2d(t, torch.from_numpy(wt).double(), None if b is None else torch.from_numpy(b).double(),
                        (sh, sw), 0, (dh, dw), groups)
    return layer, f


def convt_case(c, x, rng):
    n, cin, h, w = x.shape
    groups = rng.choice([g for g in (1, 2, cin) if cin % g == 0])
    cout = groups * rng.randint(1, 3)
    kh, kw = rng.randint(1, 5), rng.randint(1, 4)
    sh, sw = rng.randint(1, 3), rng.randint(1, 3)
    dh, dw = rng.randint(1, 2), rng.randint(1, 2)
    oph = rng.randint(0, max(sh, dh) - 1); opw = rng.randint(0, max(sw, dw) - 1)
    asym = rng.random() < 0.3
    if asym:
        pt, pb, pl, pr = (rng.randint(0, 2) for _ in range(4))
    else:
        pt = pb = rng.randint(0, 2); pl = pr = rng.randint(0, 2)
    full_h = (h - 1) * sh + dh * (kh - 1) + oph + 1
    full_w = (w - 1) * sw + dw * (kw - 1) + opw + 1
    if full_h - pt - pb < 1 or full_w - pl - pr < 1:
        return None
    bias = rng.random() < 0.6
    wt = c.rand(cin, cout // groups, kh, kw, scale=0.5)
    b = c.rand(cout) if bias else None
    layer = {"type": "conv_transpose2d", "out_channels": cout, "kernel_size": [kh, kw], "stride": [sh, sw],
             "padding": [pt, pb, pl, pr], "output_padding": [oph, opw], "dilation": [dh, dw], "groups": groups,
             "bias": bias, "init": {"weight": c.save(wt)}}
    if bias:
        layer["init"]["bias"] = c.save(b)
    def f(t):
        y = F.conv_transpose2d(t, torch.from_numpy(wt).double(), None if b is None else torch.from_numpy(b).double(),
                               (sh, sw), 0, (oph, opw), groups, (dh, dw))
        return y[:, :, pt:y.shape[2] - pb, pl:y.shape[3] - pr]
    return layer, f


def pool_case(c, x, rng, kind):
    n, ch, h, w = x.shape
    kh, kw = rng.randint(1, 4), rng.randint(1, 4)
    sh, sw = rng.randint(1, 3), rng.randint(1, 3)
    ph, pw = rng.randint(0, kh // 2), rng.randint(0, kw // 2)
    ceil = rng.random() < 0.5
    if kind == "max":
        dh, dw = rng.randint(1, 2), rng.randint(1, 2)
        if h + 2 * ph < dh * (kh - 1) + 1 or w + 2 * pw < dw * (kw - 1) + 1 or ph > (dh * (kh - 1) + 1) // 2 or pw > (dw * (kw - 1) + 1) // 2:
            return None
        layer = {"type": "maxpool2d", "kernel_size": [kh, kw], "stride": [sh, sw], "padding": [ph, pw],
                 "dilation": [dh, dw], "ceil_mode": ceil}
        f = lambda t: F.max_pool2d(t, (kh, kw), (sh, sw), (ph, pw), (dh, dw), ceil)
        if torch.isinf(f(x)).any():  # a window of padding only: ConvScope refuses it (no maximum), PyTorch gives -inf
            return None
        return layer, f
    if h + 2 * ph < kh or w + 2 * pw < kw:
        return None
    cip = rng.random() < 0.5
    div = rng.choice([None, None, 3])
    layer = {"type": "avgpool2d", "kernel_size": [kh, kw], "stride": [sh, sw], "padding": [ph, pw],
             "ceil_mode": ceil, "count_include_pad": cip}
    if div:
        layer["divisor_override"] = div
    return layer, lambda t: F.avg_pool2d(t, (kh, kw), (sh, sw), (ph, pw), ceil, cip, div)


def bn_case(c, x, rng):
    ch = x.shape[1]
    mean, var = c.rand(ch), np.abs(c.rand(ch)) + 0.1
    weight, bias = c.rand(ch), c.rand(ch)
    eps = rng.choice([1e-5, 1e-3])
    layer = {"type": "batchnorm2d", "eps": eps, "running_mean": c.save(mean), "running_var": c.save(var),
             "weight": c.save(weight), "bias": c.save(bias)}
    t = lambda a: torch.from_numpy(a).double()
    return layer, lambda v: F.batch_norm(v, t(mean), t(var), t(weight), t(bias), False, 0.0, eps)


def norm_case(c, x, rng):
    """layer_norm over the last 1 to 3 axes, group_norm, instance_norm, with and without weights (from .npy)."""
    t = lambda a: torch.from_numpy(a).double()
    kind = rng.choice(["layer_norm", "group_norm", "instance_norm"])
    eps = rng.choice([1e-5, 1e-3, 0.1])
    affine = rng.random() < 0.7
    if kind == "layer_norm":
        shape = list(x.shape[4 - rng.randint(1, 3):])
        bias = rng.random() < 0.7
        w, b = c.rand(*shape), c.rand(*shape)
        layer = {"type": "layer_norm", "normalized_shape": shape, "eps": eps, "elementwise_affine": affine, "bias": bias}
        if affine:
            layer["init"] = {"weight": c.save(w), **({"bias": c.save(b)} if bias else {})}
        return layer, lambda v: F.layer_norm(v, shape, t(w) if affine else None, t(b) if affine and bias else None, eps)
    ch = x.shape[1]
    w, b = c.rand(ch), c.rand(ch)
    if kind == "instance_norm":
        if x.shape[2] * x.shape[3] < 2:  # PyTorch refuses one position
            return None
        layer = {"type": "instance_norm", "eps": eps, "affine": affine}
        if affine:
            layer["init"] = {"weight": c.save(w), "bias": c.save(b)}
        return layer, lambda v: F.instance_norm(v, weight=t(w) if affine else None, bias=t(b) if affine else None,
                                                eps=eps)
    groups = rng.choice([g for g in range(1, ch + 1) if ch % g == 0])
    layer = {"type": "group_norm", "num_groups": groups, "eps": eps, "affine": affine}
    if affine:
        layer["init"] = {"weight": c.save(w), "bias": c.save(b)}
    return layer, lambda v: F.group_norm(v, groups, t(w) if affine else None, t(b) if affine else None, eps)


def pad_case(c, x, rng):
    h, w = x.shape[2], x.shape[3]
    mode = rng.choice(["constant", "reflect", "replicate"])
    top, bottom, left, right = (rng.randint(0, 3) for _ in range(4))
    if mode == "reflect":
        top, bottom = min(top, h - 1), min(bottom, h - 1)
        left, right = min(left, w - 1), min(right, w - 1)
    layer = {"type": "pad", "padding": [top, bottom, left, right], "mode": mode}
    value = 0.0
    if mode == "constant":
        value = rng.choice([0.0, -1.5])
        layer["value"] = value
    # F.pad's tuple is (left, right, top, bottom); the file's is [top, bottom, left, right].
    return layer, lambda t: F.pad(t, (left, right, top, bottom), mode, value) if mode == "constant" else F.pad(
        t, (left, right, top, bottom), mode)


def resize_case(c, x, rng):
    """F.interpolate in each of its modes, as the resize kind's ONNX-style fields say it (layer_spec.h's Resize)."""
    h, w = x.shape[2], x.shape[3]
    kind = rng.choice(["nearest", "nearest-exact", "bilinear", "bilinear_ac", "bicubic", "bicubic_ac"])
    mode = kind.split("_")[0]
    ac = kind.endswith("_ac")
    fields = {"nearest": {"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"},
              "nearest-exact": {"mode": "nearest", "coordinate_transformation_mode": "half_pixel",
                                "nearest_mode": "round_prefer_ceil"},
              "bilinear": {"mode": "linear"}, "bicubic": {"mode": "cubic", "cubic_coeff_a": -0.75}}[mode]
    layer = {"type": "resize", **fields}
    if mode in ("bilinear", "bicubic"):
        layer["coordinate_transformation_mode"] = "align_corners" if ac else "half_pixel"
    extra = {"align_corners": ac} if mode in ("bilinear", "bicubic") else {}
    if rng.random() < 0.5:
        size = (rng.randint(1, 2 * h + 3), rng.randint(1, 2 * w + 3))
        layer["size"] = list(size)
        return layer, lambda t: F.interpolate(t, size=size, mode=mode, **extra)
    scales = (rng.choice([2, 3]), rng.choice([1, 2])) if mode.startswith("nearest") else (
        rng.choice([0.5, 1.5, 2.0, 2.5]), rng.choice([0.75, 1.25, 2.0, 3.0]))
    if int(h * scales[0]) < 1 or int(w * scales[1]) < 1:
        return None
    layer["scale_factor"] = list(scales)
    return layer, lambda t: F.interpolate(t, scale_factor=scales, mode=mode, recompute_scale_factor=False, **extra)


def shuffle_case(c, x, rng):
    groups = rng.choice([g for g in (2, 3, 4, x.shape[1]) if x.shape[1] % g == 0 and g <= x.shape[1]] or [1])
    return {"type": "channel_shuffle", "groups": groups}, lambda t: torch.nn.ChannelShuffle(groups)(t)


def slice_case(c, x, rng):
    dim = rng.randrange(x.dim())
    size = x.shape[dim]
    start = rng.randrange(size)
    end = rng.randint(start + 1, size)
    return {"type": "slice", "dim": dim, "start": start, "end": end}, lambda t: t.narrow(dim, start, end - start)


def act_case(c, x, rng):
    kind = rng.choice(["relu", "leaky_relu", "sigmoid", "tanh", "elu", "softmax", "relu6", "hardswish",
                       "hardsigmoid", "silu", "identity", "dropout", "gelu", "softplus", "mish", "unary", "binary"])
    if kind == "binary":
        # x op constant[c] (broadcast over N, H, W) or constant op x; div's constant stays away from 0.
        op = rng.choice(["add", "sub", "mul", "div", "min", "max"])
        ch = x.shape[1]
        vals = [round(rng.choice([-1, 1]) * rng.uniform(0.5, 2.0), 3) for _ in range(ch)]
        first = op != "div" and rng.random() < 0.5
        cshape = [ch, 1, 1] if x.dim() == 4 else [ch]  # per channel of an image, per feature of a flat input
        const = torch.tensor(vals, dtype=torch.float32).double().reshape(cshape)
        fn = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div, "min": torch.minimum,
              "max": torch.maximum}[op]
        layer = {"type": "binary", "op": op, "constant": vals, "constant_shape": cshape, "constant_first": first}
        return layer, (lambda t: fn(const, t)) if first else (lambda t: fn(t, const))
    if kind == "gelu":
        a = rng.choice(["none", "tanh"])
        return {"type": "gelu", "approximate": a}, lambda t: F.gelu(t, approximate=a)
    if kind == "softplus":
        b, th = rng.choice([(1.0, 20.0), (2.0, 3.0), (0.5, 20.0)])
        return {"type": "softplus", "beta": b, "threshold": th}, lambda t: F.softplus(t, b, th)
    if kind == "mish":
        return {"type": "mish"}, F.mish
    if kind == "unary":
        # exp of ±4 inputs stays finite; erf, neg and abs take any input (log, sqrt and reciprocal need positive ones:
        # they are the CPU's and the cross-backend test's).
        op = rng.choice(["exp", "neg", "abs", "erf"])
        fn = {"exp": torch.exp, "neg": torch.neg, "abs": torch.abs, "erf": torch.erf}[op]
        return {"type": "unary", "op": op}, fn
    if kind == "relu6":
        return {"type": "relu6"}, F.relu6
    if kind == "hardswish":
        return {"type": "hardswish"}, F.hardswish
    if kind == "hardsigmoid":
        return {"type": "hardsigmoid"}, F.hardsigmoid
    if kind == "silu":
        return {"type": "silu"}, F.silu
    if kind == "identity":
        return {"type": "identity"}, lambda t: t
    if kind == "dropout":
        return {"type": "dropout", "p": 0.3}, lambda t: F.dropout(t, 0.3, training=False)
    if kind == "relu":
        return {"type": "relu"}, F.relu
    if kind == "leaky_relu":
        s = rng.choice([0.01, 0.2])
        return {"type": "leaky_relu", "negative_slope": s}, lambda t: F.leaky_relu(t, s)
    if kind == "sigmoid":
        return {"type": "sigmoid"}, torch.sigmoid
    if kind == "tanh":
        return {"type": "tanh"}, torch.tanh
    if kind == "elu":
        a = rng.choice([1.0, 0.5])
        return {"type": "elu", "alpha": a}, lambda t: F.elu(t, a)
    if kind == "softmax":  # any axis, negative too; log_softmax as often
        d = rng.randint(-4, 3)
        if rng.random() < 0.5:
            return {"type": "log_softmax", "dim": d}, lambda t: F.log_softmax(t, d)
        return {"type": "softmax", "dim": d}, lambda t: F.softmax(t, d)
    return {"type": "softmax", "dim": 1}, lambda t: F.softmax(t, 1)


def reduce_case(c, x, rng):
    # torch.mean / sum / amax / amin / linalg.vector_norm over a random set of axes (negative too), keepdim so the
    # chain stays 4-D; every axis when the set is empty.
    op = rng.choice(["mean", "sum", "max", "min", "l2"])
    dims = [a - 4 if rng.random() < 0.5 else a for a in range(4) if rng.random() < 0.5]
    axes = tuple(dims) if dims else tuple(range(4))
    fn = {"mean": lambda t: t.mean(axes, keepdim=True), "sum": lambda t: t.sum(axes, keepdim=True),
          "max": lambda t: t.amax(axes, keepdim=True), "min": lambda t: t.amin(axes, keepdim=True),
          "l2": lambda t: torch.linalg.vector_norm(t, 2, axes, keepdim=True)}[op]
    return {"type": "reduce", "op": op, "dim": dims, "keepdim": True}, fn


def make_case(rng, folder):
    c = Case(rng, folder)
    n = rng.randint(1, 3)
    ch = rng.randint(1, 6)
    h, w = rng.randint(3, 20), rng.randint(3, 20)
    # Values in ±4 reach the bends of relu6, hardswish and hardsigmoid (±3, 6) on both sides.
    x = c.rand(n, ch, h, w, scale=4.0)
    np.save(os.path.join(folder, "input.npy"), x)
    funcs, layers = [], []
    hist = [("input", torch.from_numpy(x).double())]  # every tensor a later layer may read, by name

    def push(layer, out, inputs=None):
        layer["name"] = f"l{len(layers)}"
        if inputs is not None:
            layer["inputs"] = inputs
        layers.append(layer)
        funcs.append(out)
        hist.append((layer["name"], out))
        return out

    for _ in range(rng.randint(1, 5)):
        cur_name, cur = hist[-1]
        kind = rng.choice(["conv", "conv", "convt", "max", "avg", "bn", "act", "act", "gap", "pad", "add", "mul",
                           "concat", "resize", "shuffle", "slice", "norm", "reduce", "matmul", "gather", "linear_last"])
        if kind == "matmul":  # torch.matmul over H × W, b = the input's transpose, maybe one batch item broadcast
            other, other_name = cur, cur_name
            if rng.random() < 0.5 and cur.shape[0] > 1:
                other = push({"type": "slice", "dim": 0, "start": 0, "end": 1}, cur[0:1], [cur_name])
                other_name = hist[-1][0]
            push({"type": "transpose", "dims": [0, 1, 3, 2]}, other.transpose(2, 3), [other_name])
            names = [cur_name, hist[-1][0]] if rng.random() < 0.5 else [hist[-1][0], cur_name]
            tensors = dict(hist)
            push({"type": "matmul"}, torch.matmul(tensors[names[0]], tensors[names[1]]), names)
            continue
        if kind == "gather":  # index_select along C, H or W with negative and repeated indices
            axis = rng.randint(1, 3)
            size = cur.shape[axis]
            idx = [rng.randint(-size, size - 1) for _ in range(rng.randint(1, 4))]
            wrapped = torch.tensor([i % size for i in idx])
            push({"type": "gather", "axis": axis, "indices": idx}, torch.index_select(cur, axis, wrapped))
            continue
        if kind == "linear_last":  # nn.Linear on the last axis of the 4-D tensor ([N, C, 1, 1] is read as [N, C])
            if cur.shape[2] == 1 and cur.shape[3] == 1:
                continue
            wt = c.rand(rng.randint(1, 7), cur.shape[3], scale=0.5)
            b = c.rand(wt.shape[0])
            push({"type": "linear", "out_features": wt.shape[0], "init": {"weight": c.save(wt), "bias": c.save(b)}},
                 F.linear(cur, torch.from_numpy(wt).double(), torch.from_numpy(b).double()))
            continue
        if kind == "add":
            same = [nm for nm, t in hist[:-1] if t.shape == cur.shape] or [cur_name]
            names = [cur_name] + [rng.choice(same) for _ in range(rng.randint(1, 2))]
            rng.shuffle(names)
            tensors = dict(hist)
            out = tensors[names[0]]
            for nm in names[1:]:
                out = out + tensors[nm]
            push({"type": "add"}, out, names)
            continue
        if kind == "mul":
            if rng.random() < 0.5:  # squeeze-and-excitation: gap → sigmoid → x · gate
                g = push({"type": "global_avgpool2d"}, cur.mean((2, 3), keepdim=True))
                gate = push({"type": "sigmoid"}, torch.sigmoid(g))
                names = [cur_name, hist[-1][0]]
                rng.shuffle(names)
                push({"type": "mul"}, cur * gate, names)
            else:
                same = [nm for nm, t in hist[:-1] if t.shape == cur.shape] or [cur_name]
                other = rng.choice(same)
                push({"type": "mul"}, cur * dict(hist)[other], [cur_name, other])
            continue
        if kind == "concat":
            fits = [nm for nm, t in hist[:-1] if t.dim() == 4 and t.shape[0] == cur.shape[0]
                    and t.shape[2:] == cur.shape[2:]] or [cur_name]
            names = [cur_name] + [rng.choice(fits) for _ in range(rng.randint(1, 2))]
            rng.shuffle(names)
            tensors = dict(hist)
            push({"type": "concat"}, torch.cat([tensors[nm] for nm in names], 1), names)
            continue
        for _attempt in range(10):
            made = {"conv": lambda: conv_case(c, cur, rng), "convt": lambda: convt_case(c, cur, rng),
                    "max": lambda: pool_case(c, cur, rng, "max"), "avg": lambda: pool_case(c, cur, rng, "avg"),
                    "bn": lambda: bn_case(c, cur, rng), "act": lambda: act_case(c, cur, rng),
                    "pad": lambda: pad_case(c, cur, rng), "resize": lambda: resize_case(c, cur, rng),
                    "shuffle": lambda: shuffle_case(c, cur, rng), "slice": lambda: slice_case(c, cur, rng),
                    "norm": lambda: norm_case(c, cur, rng),
                    "reduce": lambda: reduce_case(c, cur, rng),
                    "gap": lambda: ({"type": "global_avgpool2d"}, lambda t: t.mean((2, 3), keepdim=True))}[kind]()
            if made:
                break
        if not made:
            continue
        layer, f = made
        nxt = f(cur)
        if nxt.numel() == 0 or nxt.shape[2] < 1 or nxt.shape[3] < 1:
            break
        push(layer, nxt)
    cur = hist[-1][1]
    if rng.random() < 0.4:
        feats = cur.shape[1] * cur.shape[2] * cur.shape[3]
        wt, b = c.rand(rng.randint(1, 12), feats, scale=0.3), None
        b = c.rand(wt.shape[0])
        cur = push({"type": "flatten"}, cur.flatten(1))
        cur = push({"type": "linear", "out_features": wt.shape[0], "init": {"weight": c.save(wt), "bias": c.save(b)}},
                   F.linear(cur, torch.from_numpy(wt).double(), torch.from_numpy(b).double()))
        if rng.random() < 0.5:
            cur = push({"type": "softmax"}, F.softmax(cur, 1))
    net = {"format": "convscope-network", "version": 1, "name": "pytorch-check",
           "input": {"batch": n, "channels": ch, "height": h, "width": w, "source": "input.npy"}, "layers": layers}
    with open(os.path.join(folder, "net.json"), "w") as fh:
        json.dump(net, fh, indent=1)
    return layers, funcs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--cases", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--backends", default="cpu.direct", help="each selection is checked in turn")
    ap.add_argument("--tolerance", type=float, default=1e-5)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    worst, failures, layers_checked, per_kind, refused = 0.0, 0, 0, {}, 0
    for case in range(args.cases):
        with tempfile.TemporaryDirectory() as folder:
            layers, refs = make_case(rng, folder)
            if not layers:
                continue
            for sel in args.backends.split(","):
                out = os.path.join(folder, "out-" + sel)
                p = subprocess.run([args.cli, "run", os.path.join(folder, "net.json"), "--backends", sel, "--warmup",
                                    "0", "--repeat", "1", "--reference", "none", "--dump-outputs", out],
                                   capture_output=True, text=True)
                if p.returncode == 3 and "unsupported" in p.stderr:
                    refused += 1  # supports() said no, with its reason: nothing to compare
                    continue
                if p.returncode != 0:
                    failures += 1
                    print(f"case {case} {sel}: exit {p.returncode}: {p.stderr.strip()}\n{json.dumps(layers)}")
                    continue
                digits = max(2, len(str(len(layers) - 1)))  # --dump-outputs pads the index to the layer count
                for i, (layer, ref) in enumerate(zip(layers, refs)):
                    got = np.load(os.path.join(out, f"{i:0{digits}d}_{layer['name']}.npy")).astype(np.float64)
                    r = ref.numpy()
                    if got.shape != r.shape:
                        failures += 1
                        print(f"case {case} {sel} layer {i} {layer['type']}: shape {got.shape} != {r.shape}\n{json.dumps(layer)}")
                        break
                    # A max pool window that covers only padding is -inf in PyTorch: those must match exactly.
                    finite = np.isfinite(r)
                    if not np.array_equal(got[~finite], r[~finite], equal_nan=True):
                        failures += 1
                        print(f"case {case} {sel} layer {i} {layer['type']}: non-finite elements differ\n"
                              f"{json.dumps(layers)}")
                        break
                    diff = np.where(finite, got - np.where(finite, r, 0.0), 0.0)
                    err = np.linalg.norm(diff) / max(np.linalg.norm(np.where(finite, r, 0.0)), 1e-30)
                    layers_checked += 1
                    per_kind[layer["type"]] = per_kind.get(layer["type"], 0) + 1
                    worst = max(worst, err)
                    if not err <= args.tolerance:
                        failures += 1
                        print(f"case {case} {sel} layer {i} {layer['type']}: rel L2 {err:.3e}\n{json.dumps(layer)}")
                        break
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(per_kind.items()))
    print(f"pytorch check: {args.cases} cases, {layers_checked} layer outputs, worst rel L2 {worst:.2e}, "
          f"{failures} failures, {refused} runs refused by a backend's supports()\nlayer outputs per kind: {kinds}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
