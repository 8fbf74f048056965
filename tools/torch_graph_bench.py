#!/usr/bin/env python3
"""Times a ConvScope network file against PyTorch eager, side by side in one run (issue 16's goals).

A developer tool for the GPU machine (PyTorch is never a dependency of ConvScope): the network JSON is rebuilt as
PyTorch modules (conv2d, batchnorm2d, the activations, pooling, add, mul, concat, pad, flatten, linear, softmax, ...),
run in FP32 eager mode with cudnn.benchmark on and TF32 off, and timed with CUDA events over the same input that
convscope-cli then runs (--input, a .npy of the requested batch). The ConvScope figure is the whole pass without the
copies to and from the device (the sum of the layers' compute times in each timed pass, median over the passes), as
PyTorch's input already lives on the device.

  python3 tools/torch_graph_bench.py --cli build-gpu/bin/convscope-cli \
      --net resources/networks/resnet_basic_blocks.json --batch 64 \
      --backends cudnn.auto,cuda.implicit_gemm,cuda.winograd,cudnn.auto+fused,cuda.implicit_gemm+fused

  --bandwidth MiB   also times add and concat on tensors of that many MiB (a relu makes the second operand) and
                    prints the GB/s each backend reaches (bytes read + written).
  --maths LIST      math modes to compare (default fp32): fp32, tf32, fp16, bf16 (issue 20). PyTorch runs each in
                    its own way of doing it: TF32 switched on in cuDNN and cuBLAS for tf32; the model and input cast to
                    float16 / bfloat16 for fp16 / bf16; both NCHW and channels_last are timed and the faster counts.
                    ConvScope runs `--math M`. A table of every mode × (PyTorch, each selection) is printed last.
  --compile         with --maths: also time torch.compile(mode="reduce-overhead": inductor with CUDA graphs) on a
                    channels_last model in each math mode (issue 32's anchor), and print our fastest against it.
  --model FILE      ConvScope runs FILE (e.g. the network's ONNX export, `convscope-cli export NET model.onnx`)
                    instead of --net; PyTorch still builds --net. When onnxruntime with its CUDA provider is
                    installed, FILE (an .onnx) is timed there too (IO binding: input and output on the device).
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile

import numpy as np
import torch
import torch.nn.functional as F


def pair(v):
    return list(v) if isinstance(v, list) else [v, v]


def padding4(v):
    if isinstance(v, str):
        raise SystemExit(f"padding {v!r}: give explicit padding for this bench")
    if isinstance(v, int):
        return [v, v, v, v]
    if len(v) == 2:
        return [v[0], v[0], v[1], v[1]]
    return list(v)


class Graph(torch.nn.Module):
    """The network's layers in file order, each reading its named inputs (the layer above by default)."""

    def __init__(self, net, channels):
        super().__init__()
        self.layers = []  # (name, kind, module or params, input names)
        shapes = {"input": channels}
        prev = "input"
        self.mods = torch.nn.ModuleDict()
        for i, l in enumerate(net["layers"]):
            t = l["type"]
            name = l.get("name", f"L{i}")
            ins = l.get("inputs", [prev])
            c = shapes[ins[0]]
            m = None
            if t == "conv2d":
                p = padding4(l.get("padding", 0))
                # Symmetric padding as PyTorch's own conv argument (what a PyTorch model does); asymmetric as F.pad.
                symmetric = p[0] == p[1] and p[2] == p[3]
                m = torch.nn.Conv2d(c, l["out_channels"], pair(l["kernel_size"]), pair(l.get("stride", 1)),
                                    (p[0], p[2]) if symmetric else 0, pair(l.get("dilation", 1)), l.get("groups", 1),
                                    l.get("bias", True))
                m.pad = [0, 0, 0, 0] if symmetric else p
                c = l["out_channels"]
            elif t == "conv_transpose2d":
                p = padding4(l.get("padding", 0))
                assert p[0] == p[1] and p[2] == p[3], "asymmetric transposed padding"
                m = torch.nn.ConvTranspose2d(c, l["out_channels"], pair(l["kernel_size"]), pair(l.get("stride", 1)),
                                             (p[0], p[2]), pair(l.get("output_padding", 0)), l.get("groups", 1),
                                             l.get("bias", True), pair(l.get("dilation", 1)))
                c = l["out_channels"]
            elif t == "batchnorm2d":
                m = torch.nn.BatchNorm2d(c, eps=l.get("eps", 1e-5)).eval()
            elif t == "linear":
                m = torch.nn.LazyLinear(l["out_features"], bias=l.get("bias", True))
                c = l["out_features"]
            elif t == "concat":
                c = sum(shapes[s] for s in ins)
            if m is not None:
                self.mods[name.replace(".", "_")] = m  # module names may not contain "."
            self.layers.append((name, t, l, ins))
            shapes[name] = c
            prev = name

    def forward(self, x):
        out = {"input": x}
        y = x
        for name, t, l, ins in self.layers:
            a = out[ins[0]]
            if t == "conv2d":
                m = self.mods[name.replace(".", "_")]
                p = m.pad
                if any(p):
                    a = F.pad(a, (p[2], p[3], p[0], p[1]))
                y = m(a)
            elif t in ("conv_transpose2d", "batchnorm2d"):
                y = self.mods[name.replace(".", "_")](a)
            elif t == "linear":
                y = self.mods[name.replace(".", "_")](a.flatten(1))
            elif t == "relu":
                y = F.relu(a)
            elif t == "leaky_relu":
                y = F.leaky_relu(a, l.get("negative_slope", 0.01))
            elif t == "relu6":
                y = F.relu6(a)
            elif t == "hardswish":
                y = F.hardswish(a)
            elif t == "hardsigmoid":
                y = F.hardsigmoid(a)
            elif t == "silu":
                y = F.silu(a)
            elif t == "sigmoid":
                y = torch.sigmoid(a)
            elif t == "tanh":
                y = torch.tanh(a)
            elif t == "elu":
                y = F.elu(a, l.get("alpha", 1.0))
            elif t == "maxpool2d":
                k = pair(l.get("kernel_size", 2))
                y = F.max_pool2d(a, k, pair(l.get("stride", k)), ceil_mode=l.get("ceil_mode", False))
            elif t == "avgpool2d":
                k = pair(l.get("kernel_size", 2))
                y = F.avg_pool2d(a, k, pair(l.get("stride", k)), ceil_mode=l.get("ceil_mode", False))
            elif t == "global_avgpool2d":
                y = F.adaptive_avg_pool2d(a, 1)
            elif t == "flatten":
                y = a.flatten(1)
            elif t == "softmax":
                y = torch.softmax(a, 1)
            elif t == "add":
                y = a
                for s in ins[1:]:
                    y = y + out[s]
            elif t == "mul":
                y = a * out[ins[1]]
            elif t == "concat":
                y = torch.cat([out[s] for s in ins], 1)
            elif t == "pad":
                p = l["padding"]
                y = F.pad(a, (p[2], p[3], p[0], p[1]), mode=l.get("mode", "constant"), value=l.get("value", 0.0)) \
                    if l.get("mode", "constant") == "constant" else \
                    F.pad(a, (p[2], p[3], p[0], p[1]), mode=l["mode"])
            elif t in ("identity", "dropout"):
                y = a
            else:
                raise SystemExit(f"torch_graph_bench: layer type {t} is not mapped")
            out[name] = y
        return y


def time_torch(model, x, warmup, repeat):
    with torch.no_grad():
        for _ in range(warmup):
            model(x)
        torch.cuda.synchronize()
        times = []
        for _ in range(repeat):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            model(x)
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b))
    return statistics.median(times)


def time_onnxruntime(model, x, warmup, repeat):
    """The .onnx model on onnxruntime's CUDA provider, FP32 (TF32 off), input and output bound on the device."""
    if not model or not model.endswith(".onnx"):
        return None, "no .onnx model"
    try:
        import onnxruntime as ort
    except ImportError:
        return None, "onnxruntime is not installed here"
    if "CUDAExecutionProvider" not in ort.get_available_providers():
        return None, "onnxruntime has no CUDA provider here (" + ", ".join(ort.get_available_providers()) + ")"
    sess = ort.InferenceSession(model, providers=[("CUDAExecutionProvider", {"use_tf32": 0,
                                                   "cudnn_conv_algo_search": "EXHAUSTIVE"})])
    xt = torch.from_numpy(x).cuda()
    out_shape = sess.run(None, {sess.get_inputs()[0].name: x})[0].shape
    y = torch.empty(out_shape, device="cuda")
    io = sess.io_binding()
    io.bind_input(sess.get_inputs()[0].name, "cuda", 0, np.float32, list(xt.shape), xt.data_ptr())
    io.bind_output(sess.get_outputs()[0].name, "cuda", 0, np.float32, list(y.shape), y.data_ptr())
    for _ in range(warmup):
        sess.run_with_iobinding(io)
    times = []
    for _ in range(repeat):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        a.record()
        sess.run_with_iobinding(io)
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times), ""


def run_convscope(cli, net_path, npy, backends, warmup, repeat, workdir, math="fp32"):
    report = os.path.join(workdir, "report.json")
    cmd = [cli, "run", net_path, "--input", npy, "--backends", backends, "--reference", "none",
           "--warmup", str(warmup), "--repeat", str(repeat), "--report", report, "--math", math]
    r = subprocess.run(cmd, capture_output=True, text=True)
    # 3: a selection was refused (cuda.tensor_core in fp32); the others ran and the report says which.
    if r.returncode not in (0, 1, 3) or not os.path.exists(report):
        print(r.stdout[-3000:], r.stderr[-3000:])
        raise SystemExit(f"convscope-cli exited {r.returncode}")
    rep = json.load(open(report))
    result = {}
    for s in rep["selections"]:
        if not s["ok"]:
            result[s["selection"]] = (None, s.get("failure", ""), None)
            continue
        passes = [sum(l["samples_ms"][k] for l in s["layers"]) for k in range(len(s["layers"][0]["samples_ms"]))]
        result[s["selection"]] = (statistics.median(passes), "", s["layers"])
    return result, rep


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--net", required=True)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--backends", default="cudnn.auto,cuda.implicit_gemm")
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=50)
    ap.add_argument("--bandwidth", type=int, default=0, help="MiB per tensor for the add/concat bandwidth cases")
    ap.add_argument("--model", help="the file ConvScope runs (default --net), e.g. its ONNX export")
    ap.add_argument("--maths", default="fp32", help="comma-separated: fp32,tf32,fp16,bf16")
    ap.add_argument("--compile", action="store_true", help="with --maths: torch.compile(mode='reduce-overhead') too")
    args = ap.parse_args()
    if args.maths != "fp32" or args.compile:
        return math_table(args)

    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    net = json.load(open(args.net))
    inp = net["input"]
    shape = (args.batch, inp["channels"], inp["height"], inp["width"])
    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 1, size=shape).astype(np.float32)
    with tempfile.TemporaryDirectory() as work:
        npy = os.path.join(work, "input.npy")
        np.save(npy, x)
        model = Graph(net, inp["channels"]).cuda().eval()
        xt = torch.from_numpy(x).cuda()
        with torch.no_grad():
            model(xt)  # materialises the lazy linear
        t_torch = time_torch(model, xt, args.warmup, args.repeat)
        ours, _ = run_convscope(args.cli, args.model or args.net, npy, args.backends, args.warmup, args.repeat, work)
        t_ort, ort_why = time_onnxruntime(args.model, x, args.warmup, args.repeat)
        # PyTorch again after ConvScope, so a clock change during the run shows as a difference.
        t_torch2 = time_torch(model, xt, args.warmup, args.repeat)
    print(f"\n{net['name']} at batch {args.batch}, {shape[2]}x{shape[3]}, FP32, whole pass without copies "
          f"(median of {args.repeat})")
    print(f"  {'PyTorch eager (cudnn.benchmark)':40s} {t_torch:9.4f} ms   (again after: {t_torch2:.4f} ms)")
    if t_ort is not None:
        print(f"  {'onnxruntime CUDA provider':40s} {t_ort:9.4f} ms")
    elif args.model:
        print(f"  {'onnxruntime CUDA provider':40s}  did not run: {ort_why}")
    ref = min([t_torch, t_torch2] + ([t_ort] if t_ort is not None else []))
    for sel, (ms, why, _) in ours.items():
        if ms is None:
            print(f"  {sel:40s}  did not run: {why[:100]}")
        else:
            print(f"  {sel:40s} {ms:9.4f} ms   {ms / ref:5.2f}x PyTorch   goal <= 1.10x: {'met' if ms / ref <= 1.1 else 'NOT met'}")

    if args.bandwidth:
        bandwidth(args)


def time_torch_math(net, x, math, warmup, repeat, compiled=False):
    """PyTorch eager in `math`: the faster of NCHW and channels_last; or (compiled) torch.compile with inductor and
    CUDA graphs (mode="reduce-overhead") on channels_last, after enough calls to compile and record the graph."""
    torch.backends.cudnn.allow_tf32 = math == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = math == "tf32"
    torch.set_float32_matmul_precision("high" if math == "tf32" else "highest")
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(math, torch.float32)
    best = None
    for fmt in (torch.channels_last,) if compiled else (torch.contiguous_format, torch.channels_last):
        model = Graph(net, net["input"]["channels"]).cuda().eval()
        xt = torch.from_numpy(x).cuda()
        with torch.no_grad():
            model(xt)  # materialises the lazy linear in FP32
        model = model.to(dtype=dtype, memory_format=fmt)
        xt = xt.to(dtype=dtype).contiguous(memory_format=fmt)
        if compiled:
            torch._dynamo.reset()
            model = torch.compile(model, mode="reduce-overhead")
            warmup = max(warmup, 5)
        t = time_torch(model, xt, warmup, repeat)
        best = t if best is None else min(best, t)
        del model
        torch.cuda.empty_cache()
    return best


def math_table(args):
    """Every math mode × (PyTorch eager, each ConvScope selection), whole pass without copies (issue 20)."""
    torch.backends.cudnn.benchmark = True
    net = json.load(open(args.net))
    inp = net["input"]
    shape = (args.batch, inp["channels"], inp["height"], inp["width"])
    x = np.random.default_rng(1).uniform(-1, 1, size=shape).astype(np.float32)
    maths = args.maths.split(",")
    rows = {}
    with tempfile.TemporaryDirectory() as work:
        npy = os.path.join(work, "input.npy")
        np.save(npy, x)
        for math in maths:
            t_torch = time_torch_math(net, x, math, args.warmup, args.repeat)
            ours, _ = run_convscope(args.cli, args.model or args.net, npy, args.backends, args.warmup, args.repeat, work,
                                    math)
            t_torch2 = time_torch_math(net, x, math, args.warmup, args.repeat)
            t_comp = time_torch_math(net, x, math, args.warmup, args.repeat, True) if args.compile else None
            rows[math] = (min(t_torch, t_torch2), ours, t_comp)
            print(f"{math}: PyTorch {t_torch:.4f} / {t_torch2:.4f} ms; " + ", ".join(
                f"{s} {v[0]:.4f} ms" if v[0] is not None else f"{s} did not run: {v[1][:80]}" for s, v in ours.items()),
                flush=True)
    sels = list(next(iter(rows.values()))[1].keys())
    print(f"\n{net['name']} at batch {args.batch}, {shape[2]}x{shape[3]}, whole pass without copies, median of "
          f"{args.repeat} (ms; ratio to PyTorch eager in the same math; PyTorch: faster of NCHW and channels_last)")
    comp = args.compile
    print("| math | PyTorch eager | " + ("torch.compile | " if comp else "") + " | ".join(sels)
          + " | our fastest vs PyTorch |" + (" our fastest vs torch.compile |" if comp else ""))
    print("|---|---|" + ("---|" if comp else "") + "---|" * len(sels) + "---|" + ("---|" if comp else ""))
    for math, (t, ours, tc) in rows.items():
        cells, best = [], None
        for s in sels:
            ms = ours[s][0]
            cells.append(f"{ms:.3f} ({ms / t:.2f}×)" if ms is not None else "—")
            if ms is not None:
                best = ms if best is None else min(best, ms)
        verdict = f"{best / t:.2f}× ({'ahead' if best < t else 'behind'})" if best is not None else "—"
        if comp:
            vc = f"{best / tc:.2f}× ({'ahead' if best < tc else 'behind'})" if best is not None else "—"
            print(f"| {math} | {t:.3f} | {tc:.3f} | " + " | ".join(cells) + f" | {verdict} | {vc} |")
        else:
            print(f"| {math} | {t:.3f} | " + " | ".join(cells) + f" | {verdict} |")


def bandwidth(args):
    """add and concat on tensors of args.bandwidth MiB: GB/s = (bytes read + written) / time, per backend."""
    mib = args.bandwidth
    c, h = 64, 1024
    w = max(1, mib * (1 << 20) // (4 * c * h))
    for kind in ("add", "concat"):
        net = {"format": "convscope-network", "version": 1, "name": f"{kind} {mib} MiB",
               "input": {"batch": 1, "channels": c, "height": h, "width": w, "source": "random:1"},
               "layers": [{"type": "relu", "name": "other"},
                          {"type": kind, "name": kind, "inputs": ["input", "other"]}]}
        with tempfile.TemporaryDirectory() as work:
            path = os.path.join(work, "net.json")
            json.dump(net, open(path, "w"))
            npy = os.path.join(work, "input.npy")
            np.save(npy, np.random.default_rng(2).uniform(-1, 1, size=(1, c, h, w)).astype(np.float32))
            ours, rep = run_convscope(args.cli, path, npy, "cuda.direct,cudnn.auto", 3, 20, work)
        bytes_moved = rep["layers"][1]["bytes_read"] + rep["layers"][1]["bytes_written"]
        a = torch.rand(1, c, h, w, device="cuda")
        b = torch.rand(1, c, h, w, device="cuda")
        f = (lambda: a + b) if kind == "add" else (lambda: torch.cat([a, b], 1))
        for _ in range(3):
            f()
        torch.cuda.synchronize()
        ts = []
        for _ in range(20):
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            f()
            e1.record()
            e1.synchronize()
            ts.append(e0.elapsed_time(e1))
        t_torch = statistics.median(ts)
        print(f"\n{kind} of two [1, {c}, {h}, {w}] tensors ({mib} MiB each), {bytes_moved / 1e6:.0f} MB moved")
        print(f"  {'PyTorch':20s} {t_torch:8.4f} ms  {bytes_moved / (t_torch * 1e-3) / 1e9:7.0f} GB/s")
        for sel, (ms, why, layers) in ours.items():
            if ms is None:
                print(f"  {sel:20s} did not run: {why[:100]}")
                continue
            t = statistics.median(layers[1]["samples_ms"])
            gbs = bytes_moved / (t * 1e-3) / 1e9
            print(f"  {sel:20s} {t:8.4f} ms  {gbs:7.0f} GB/s   goal >= 3500 GB/s: {'met' if gbs >= 3500 else 'NOT met'}")


if __name__ == "__main__":
    main()
