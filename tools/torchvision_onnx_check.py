#!/usr/bin/env python3
"""Real architectures through ConvScope's ONNX import, checked against onnxruntime (issue 17).

Exports six torchvision models with seeded random weights (no download: weights=None, then every parameter and
batch-norm statistic drawn from a seeded generator, so batch norm is not the identity) to ONNX, runs each in
onnxruntime on a seeded input, then runs ConvScope (`convscope-cli run model.onnx --input x.npy --dump-outputs`) on
every selection asked for and prints the relative L2 error of ConvScope's output against onnxruntime's. Goal:
≤ 1e-4 on every backend.

PyTorch, torchvision and onnxruntime are developer tools here, never dependencies of ConvScope.

    python3 tools/torchvision_onnx_check.py --cli build/ci/bin/convscope-cli --out /tmp/tv \
        --backends cpu.direct,cpu.im2col_gemm            # here
    python3 tools/torchvision_onnx_check.py --models-only --out models/   # export only (for the GPU machine)
    python3 tools/torchvision_onnx_check.py --cli ... --out models/ --reuse --backends cuda.implicit_gemm,cudnn.auto
    python3 tools/torchvision_onnx_check.py --cli ... --out /tmp/ex --exported-examples
        # the other direction: every example network exported by `convscope-cli export`, run by onnxruntime, against
        # ConvScope's own output on the same input
"""
import argparse
import os
import subprocess
import sys
import time

import numpy as np

MODELS = ["resnet18", "mobilenet_v2", "squeezenet1_1", "googlenet", "mnasnet0_5", "efficientnet_b0"]


def randomize_batch_norm(model, seed):
    """Draws every batch norm's scale, shift and running statistics (1-D, 2-D and 3-D) from a seeded generator, so
    that batch norm is not the identity it is after weights=None; the other parameters keep their seeded init."""
    import torch

    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.modules.batchnorm._BatchNorm) and m.running_mean is not None:
                if m.affine:
                    m.weight.copy_(torch.rand(m.weight.shape, generator=g) + 0.5)
                    m.bias.copy_(torch.rand(m.bias.shape, generator=g) - 0.5)
                m.running_mean.copy_(torch.rand(m.running_mean.shape, generator=g) * 0.2 - 0.1)
                m.running_var.copy_(torch.rand(m.running_var.shape, generator=g) + 0.5)
    return model


def export(name, out, size, seed):
    import torch
    import torchvision

    torch.manual_seed(seed)
    kwargs = {"weights": None}
    if name == "googlenet":
        kwargs.update(aux_logits=False, init_weights=False)
    model = getattr(torchvision.models, name)(**kwargs).eval()
    randomize_batch_norm(model, seed)
    x = torch.from_numpy(np.random.default_rng(seed).standard_normal((1, 3, size, size)).astype(np.float32))
    path = os.path.join(out, name + ".onnx")
    torch.onnx.export(model, (x,), path, opset_version=17, input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}}, dynamo=False)
    np.save(os.path.join(out, name + ".x.npy"), x.numpy())
    with torch.no_grad():  # PyTorch's own output: the reference where onnxruntime is not installed
        np.save(os.path.join(out, name + ".torch.npy"), model(x).numpy())
    return path


def reference(out, name):
    try:
        import onnxruntime as ort
    except ImportError:  # the GPU machine may lack it: PyTorch's output of the same model and input instead
        y = np.load(os.path.join(out, name + ".torch.npy"))
        np.save(os.path.join(out, name + ".ort.npy"), y)
        print(f"{name}: onnxruntime is not installed; the reference is PyTorch's output")
        return y

    x = np.load(os.path.join(out, name + ".x.npy"))
    sess = ort.InferenceSession(os.path.join(out, name + ".onnx"), providers=["CPUExecutionProvider"])
    y = sess.run(None, {sess.get_inputs()[0].name: x})[0]
    np.save(os.path.join(out, name + ".ort.npy"), y)
    return y


def convscope(cli, out, name, selection):
    dump = os.path.join(out, name + "." + selection)
    cmd = [cli, "run", os.path.join(out, name + ".onnx"), "--input", os.path.join(out, name + ".x.npy"),
           "--backends", selection, "--reference", "none", "--warmup", "0", "--repeat", "1", "--dump-outputs", dump]
    t0 = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return None, r.stdout[-2000:] + r.stderr[-2000:], time.time() - t0
    last = max((f for f in os.listdir(dump) if f.endswith(".npy")), key=lambda f: int(f.split("_")[0]))
    layers = len([f for f in os.listdir(dump) if f.endswith(".npy")])
    return np.load(os.path.join(dump, last)), layers, time.time() - t0


def exported_examples(cli, out):
    import glob
    import onnxruntime as ort

    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "resources", "networks")
    worst = 0.0
    print(f"{'example':28} {'rel L2 onnxruntime vs ConvScope':>32}")
    for net in sorted(glob.glob(os.path.join(root, "*.json"))):
        name = os.path.basename(net)[:-5]
        model = os.path.join(out, name + ".onnx")
        r = subprocess.run([cli, "export", net, model], capture_output=True, text=True)
        if r.returncode != 0:
            print(f"{name:28} not exported: {(r.stdout + r.stderr).strip().splitlines()[-1]}")
            continue
        sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
        shape = [d if isinstance(d, int) else 2 for d in sess.get_inputs()[0].shape]
        x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
        np.save(os.path.join(out, name + ".x.npy"), x)
        y = sess.run(None, {sess.get_inputs()[0].name: x})[0]
        dump = os.path.join(out, name + ".dump")
        subprocess.run([cli, "run", net, "--input", os.path.join(out, name + ".x.npy"), "--backends", "cpu.direct",
                        "--warmup", "0", "--repeat", "1", "--dump-outputs", dump], check=True, capture_output=True)
        last = max((f for f in os.listdir(dump) if f.endswith(".npy")), key=lambda f: int(f.split("_")[0]))
        got = np.load(os.path.join(dump, last)).reshape(y.shape)
        rel = float(np.linalg.norm(got - y) / max(np.linalg.norm(got), 1e-30))
        worst = max(worst, rel)
        print(f"{name:28} {rel:32.2e}")
    print(f"worst relative L2: {worst:.2e} (goal ≤ 1e-4)")
    return worst <= 1e-4


def add_common_arguments(ap, backends, models, size):
    """The options every ONNX check script takes (this one and segmentation_onnx_check.py)."""
    ap.add_argument("--cli", help="convscope-cli to run")
    ap.add_argument("--out", required=True)
    ap.add_argument("--backends", default=backends)
    ap.add_argument("--models", default=",".join(models))
    ap.add_argument("--size", type=int, default=size)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--models-only", action="store_true", help="export and compute onnxruntime's outputs only")
    ap.add_argument("--reuse", action="store_true", help="reuse models and onnxruntime outputs already in --out")


def check_models(a, export_model, width=16):
    """Exports each model of --models with export_model(name, out, size, seed) (unless --reuse), runs it in
    onnxruntime and on every selection of --backends, prints the table and exits 0 when every relative L2 error
    against onnxruntime is within 1e-4."""
    os.makedirs(a.out, exist_ok=True)
    rows, worst = [], 0.0
    for name in a.models.split(","):
        if not a.reuse:
            export_model(name, a.out, a.size, a.seed)
            y = reference(a.out, name)
        else:
            y = np.load(os.path.join(a.out, name + ".ort.npy"))
        if a.models_only:
            print(f"{name}: exported, onnxruntime output {list(y.shape)}")
            continue
        for sel in a.backends.split(","):
            got, info, secs = convscope(a.cli, a.out, name, sel)
            if got is None:
                rows.append((name, sel, "FAILED", info.strip().splitlines()[-1] if info.strip() else "", secs))
                worst = float("inf")
                continue
            got = got.reshape(y.shape)
            rel = float(np.linalg.norm(got - y) / np.linalg.norm(y))
            worst = max(worst, rel)
            rows.append((name, sel, f"{rel:.2e}", f"{info} layers", secs))
    if rows:
        print(f"{'model':{width}} {'selection':22} {'rel L2 vs onnxruntime':>22}  {'layers':>10}  {'run s':>6}")
        for name, sel, rel, info, secs in rows:
            print(f"{name:{width}} {sel:22} {rel:>22}  {info:>10}  {secs:6.1f}")
        print(f"worst relative L2: {worst:.2e} (goal ≤ 1e-4)")
        sys.exit(0 if worst <= 1e-4 else 1)


def main():
    ap = argparse.ArgumentParser()
    add_common_arguments(ap, "cpu.direct,cpu.im2col_gemm", MODELS, 224)
    ap.add_argument("--exported-examples", action="store_true",
                    help="export every example network and run it in onnxruntime instead")
    a = ap.parse_args()
    if a.exported_examples:
        os.makedirs(a.out, exist_ok=True)
        sys.exit(0 if exported_examples(a.cli, a.out) else 1)
    check_models(a, export)


if __name__ == "__main__":
    main()
