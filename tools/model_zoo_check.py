#!/usr/bin/env python3
"""Every torchvision model through ConvScope's ONNX import, checked against onnxruntime (issue 30).

Exports, with seeded random weights and no download (weights=None; every batch norm's statistics drawn too, as
torchvision_onnx_check.py does; every parameter left all zero, such as ViT's head, drawn too: reseed_zero_parameters),
every model of torchvision.models (classification), torchvision.models.segmentation
(FCN, DeepLabV3, LRASPP: the "out" map) and torchvision.models.video (R3D-18, MC3-18, R(2+1)D-18, S3D, MViT, Swin3D),
plus our own U-Net with bilinear upsampling and FPN / YOLO-style neck (segmentation_onnx_check.py), each at the
smallest input it accepts (found by running the PyTorch model on growing inputs), to ONNX (opset 17). Runs each in
onnxruntime, then `convscope-cli run model.onnx --input x.npy --dump-outputs DIR` on every selection of --backends,
and prints one row per model and selection:

    model, input, parameters, layers, status (ok / refused: the message's first line / mismatch / not exported:
    why), relative L2 error of ConvScope's last output against onnxruntime's (goal ≤ 1e-4)

A model of over 2 GB of weights (protobuf's limit for one file: ViT-H/14, RegNetY-128GF) is written with its weights
as ONNX external data, NAME.onnx.data beside NAME.onnx; a model the exporter refuses is listed with the reason. PyTorch, torchvision, onnx and onnxruntime are developer tools here, never dependencies of ConvScope.

    python3 tools/model_zoo_check.py --cli build/ci/bin/convscope-cli --out /tmp/zoo --skip-large 30e6
    python3 tools/model_zoo_check.py --cli ... --out /tmp/zoo --models resnet18,r3d_18,unet_bilinear
    python3 tools/model_zoo_check.py --models-only --out models/              # export only (for the GPU machine)
    python3 tools/model_zoo_check.py --cli ... --out models/ --reuse --backends cuda.implicit_gemm,cudnn.auto
"""
import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from segmentation_onnx_check import own_model  # noqa: E402
from torchvision_onnx_check import randomize_batch_norm, reference  # noqa: E402

OWN = ["unet_bilinear", "fpn_nearest"]
# Candidate inputs, smallest first: image sides, and (frames, side) for the video models.
IMAGE_SIDES = [32, 48, 64, 75, 96, 128, 160, 192, 224, 256, 299]
VIDEO_SIZES = sorted(((t, s) for t in (1, 2, 4, 8, 16) for s in (32, 64, 112, 128, 160, 224)),
                     key=lambda ts: (ts[0] * ts[1] * ts[1], ts[1]))
PROTOBUF_LIMIT = 2 ** 31  # bytes: a model whose weights pass it cannot be one .onnx file


def catalogue():
    """{name: group} for every model the script knows, in the order it runs them."""
    import torchvision.models as tvm

    names = {}
    for n in tvm.list_models(module=tvm):
        names[n] = "classification"
    for n in tvm.list_models(module=tvm.segmentation):
        names[n] = "segmentation"
    for n in tvm.list_models(module=tvm.video):
        names[n] = "video"
    for n in OWN:
        names[n] = "own"
    return names


def build(name, group):
    import torch
    import torchvision.models as tvm

    torch.manual_seed(0)
    if group == "own":
        return own_model(name)
    if group == "segmentation":
        inner = tvm.get_model(name, weights=None, weights_backbone=None)

        class Out(torch.nn.Module):  # the "out" entry of the dict the segmentation models return
            def __init__(self):
                super().__init__()
                self.m = inner

            def forward(self, x):
                return self.m(x)["out"]

        return Out()
    kwargs = {"weights": None}
    if name in ("googlenet", "inception_v3"):
        kwargs.update(aux_logits=False, init_weights=False)
    return tvm.get_model(name, **kwargs)


@contextlib.contextmanager
def quiet():
    """File descriptors 1 and 2 to /dev/null for the block (C++ writes there too, past Python's sys.stderr)."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
        os.dup2(null, 2)
        yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in saved + [null]:
            os.close(fd)


def reseed_zero_parameters(model, seed):
    """Draws every parameter that weights=None left all zero (ViT's and Swin's classification head, ViT's class
    token, the zero biases of linear and convolution layers, layer norm shifts) from a seeded generator, so that no
    part of the output is zero by construction: with ViT's zero head the logits are all zero and any backend
    "matches". Weights of 2 or more dims: uniform in ±1/sqrt(fan-in) (PyTorch's default for Linear); 1-D: ±0.1."""
    import torch

    g = torch.Generator().manual_seed(seed + 1)
    count = 0
    with torch.no_grad():
        for _, p in sorted(model.named_parameters()):
            if p.numel() == 0 or torch.count_nonzero(p) != 0:
                continue
            fan_in = max(1, p[0].numel()) if p.dim() >= 2 else 0
            bound = fan_in ** -0.5 if fan_in else 0.1
            p.copy_((torch.rand(p.shape, generator=g) * 2 - 1) * bound)
            count += 1
    return model, count


def export_smallest(model, group, path, seed):
    """Exports the model at the smallest input it runs on in PyTorch and the ONNX exporter takes (AlexNet's adaptive
    pool, for one, exports only where its output size divides its input's); returns the input."""
    import torch

    shapes = ([(1, 3, t, s, s) for t, s in VIDEO_SIZES] if group == "video"
              else [(1, 3, s, s) for s in IMAGE_SIDES])
    first_export_error, last = None, None
    for shape in shapes:
        x = torch.from_numpy(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))
        try:
            with torch.no_grad():
                model(x)
        except Exception as e:  # too small for a fixed window, a position embedding, a pool: try the next
            last = e
            continue
        try:
            with quiet():  # a refused export prints its whole graph from C++
                torch.onnx.export(model, (x,), path, opset_version=17, input_names=["input"], output_names=["out"],
                                  dynamo=False)
            return x
        except Exception as e:
            first_export_error = first_export_error or e
    if first_export_error is not None:
        raise first_export_error
    raise RuntimeError(f"no input of {shapes[0]}..{shapes[-1]} runs: {str(last).splitlines()[0]}")


def gather_external_data(parts, out, name):
    """The model exported into `parts` with its tensors as external data (the exporter writes one file per tensor)
    rewritten as out/NAME.onnx and one out/NAME.onnx.data beside it (ONNX external data: location, offset, length),
    which ConvScope and onnxruntime read from the model's folder."""
    import onnx

    m = onnx.load(os.path.join(parts, name + ".onnx"))  # reads the external tensors in
    data = os.path.join(out, name + ".onnx.data")
    if os.path.exists(data):
        os.remove(data)
    onnx.save_model(m, os.path.join(out, name + ".onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
                    location=name + ".onnx.data", size_threshold=1024)
    shutil.rmtree(parts, ignore_errors=True)


def export(name, group, out, seed, skip_large):
    """Writes NAME.onnx, NAME.x.npy and NAME.meta.json (input, parameters, or why it was not exported)."""
    import torch

    meta = {"name": name, "group": group}
    try:
        model, meta["reseeded"] = reseed_zero_parameters(randomize_batch_norm(build(name, group).eval(), seed), seed)
        meta["params"] = sum(p.numel() for p in model.parameters())
        if skip_large and meta["params"] > skip_large:
            meta["skipped"] = f"{meta['params'] / 1e6:.0f} M parameters (over --skip-large)"
        else:
            large = (meta["params"] + sum(b.numel() for b in model.buffers())) * 4 >= PROTOBUF_LIMIT
            if large:  # over protobuf's 2 GB: exported beside a folder of tensors, then gathered into one data file
                parts = os.path.join(out, name + ".parts")
                shutil.rmtree(parts, ignore_errors=True)
                os.makedirs(parts)
                x = export_smallest(model, group, os.path.join(parts, name + ".onnx"), seed)
                gather_external_data(parts, out, name)
                meta["external_data"] = name + ".onnx.data"
            else:
                x = export_smallest(model, group, os.path.join(out, name + ".onnx"), seed)
            meta["input"] = list(x.shape)
            np.save(os.path.join(out, name + ".x.npy"), x.numpy())
            with torch.no_grad():
                np.save(os.path.join(out, name + ".torch.npy"), model(x).numpy())
    except Exception as e:
        meta["skipped"] = "not exported: " + (str(e).strip().splitlines() or [type(e).__name__])[0][:200]
    with open(os.path.join(out, name + ".meta.json"), "w") as f:
        json.dump(meta, f)
    return meta


def run_convscope(cli, out, name, selection, timeout):
    """(output array, layer count, None) or (None, None, the refusal's first line)."""
    dump = os.path.join(out, name + "." + selection)
    shutil.rmtree(dump, ignore_errors=True)
    cmd = [cli, "run", os.path.join(out, name + ".onnx"), "--input", os.path.join(out, name + ".x.npy"),
           "--backends", selection, "--reference", "none", "--warmup", "0", "--repeat", "1", "--dump-outputs", dump]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, None, f"timed out after {timeout} s"
    if r.returncode != 0:
        lines = [ln for ln in (r.stderr + r.stdout).splitlines() if ln.strip()]
        msg = next((ln for ln in lines if ln.startswith("convscope-cli: ")), lines[-1] if lines else "")
        msg = msg.replace("convscope-cli: ", "", 1).replace(os.path.join(out, name + ".onnx") + ": ", "")
        msg = msg.replace(name + ".onnx: ", "", 1)
        return None, None, f"exit {r.returncode}: {msg}"
    files = sorted(f for f in os.listdir(dump) if f.endswith(".npy"))  # zero-padded: sorted is layer order
    y = np.load(os.path.join(dump, files[-1]))
    shutil.rmtree(dump, ignore_errors=True)
    return y, len(files), None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cli", help="convscope-cli to run")
    ap.add_argument("--out", required=True, help="folder for the models, inputs and outputs")
    ap.add_argument("--backends", default="cpu.im2col_gemm", help="comma-separated selections")
    ap.add_argument("--models", help="comma-separated subset (default: every model)")
    ap.add_argument("--skip-large", type=float, default=0, help="skip models of more than N parameters")
    ap.add_argument("--reuse", action="store_true", help="reuse models and onnxruntime outputs already in --out")
    ap.add_argument("--models-only", action="store_true", help="export and compute onnxruntime's outputs only")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=int, default=900, help="seconds per ConvScope run")
    ap.add_argument("--json", help="also write the rows to this JSON file")
    a = ap.parse_args()
    if not a.models_only and not a.cli:
        ap.error("--cli is needed unless --models-only")
    os.makedirs(a.out, exist_ok=True)
    known = catalogue()
    names = a.models.split(",") if a.models else list(known)
    for n in names:
        if n not in known:
            ap.error(f"unknown model {n} (torchvision's classification, segmentation and video models, {OWN})")

    rows, header = [], f"{'model':30} {'input':18} {'params':>8} {'selection':16} {'layers':>6} {'rel L2':>9}  status"
    print(header, flush=True)
    for name in names:
        meta_path = os.path.join(a.out, name + ".meta.json")
        if a.reuse and os.path.exists(meta_path):
            with open(meta_path) as f:
                meta = json.load(f)
        else:
            meta = export(name, known[name], a.out, a.seed, a.skip_large)
            if "skipped" not in meta:
                try:
                    reference(a.out, name)
                except Exception as e:  # MViT's export holds If nodes that onnxruntime itself fails on
                    meta["skipped"] = "onnxruntime fails on the export: " + str(e).strip().splitlines()[0][:200]
                    with open(meta_path, "w") as f:
                        json.dump(meta, f)
        shape = "x".join(map(str, meta.get("input", []))) or "-"
        params = ("-" if "params" not in meta else f"{meta['params'] / 1e6:.1f}M" if meta["params"] >= 1e5
                  else f"{meta['params'] / 1e3:.1f}K")
        if "skipped" in meta or a.models_only:
            row = dict(model=name, input=shape, params=params, selection="-", layers="-", rel="-",
                       status=meta.get("skipped", "exported"))
            rows.append(row)
            print(f"{name:30} {shape:18} {params:>8} {'-':16} {'-':>6} {'-':>9}  {row['status']}", flush=True)
            continue
        y = np.load(os.path.join(a.out, name + ".ort.npy"))
        for sel in a.backends.split(","):
            t0 = time.time()
            got, layers, why = run_convscope(a.cli, a.out, name, sel, a.timeout)
            rel = None
            if why is not None:
                status = "refused: " + why if why.startswith("exit 2") else "failed: " + why
            elif got.size != y.size:
                status = f"mismatch: output {list(got.shape)}, onnxruntime {list(y.shape)}"
            else:
                rel = float(np.linalg.norm(got.reshape(y.shape).astype(np.float64) - y)
                            / max(np.linalg.norm(y.astype(np.float64)), 1e-30))
                status = "ok" if rel <= 1e-4 else "mismatch"
            row = dict(model=name, input=shape, params=params, selection=sel, layers=layers if layers else "-",
                       rel=f"{rel:.1e}" if rel is not None else "-", status=status, seconds=round(time.time() - t0, 1))
            rows.append(row)
            print(f"{name:30} {shape:18} {params:>8} {sel:16} {row['layers']:>6} {row['rel']:>9}  {status[:200]}",
                  flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    ran = [r for r in rows if r["selection"] != "-"]
    ok = sum(r["status"] == "ok" for r in ran)
    print(f"{ok} of {len(ran)} runs within 1e-4 of onnxruntime; "
          f"{sum(r['status'].startswith('refused') for r in ran)} refused, "
          f"{sum(r['status'].startswith('mismatch') for r in ran)} mismatched, "
          f"{sum(r['status'].startswith('failed') for r in ran)} failed; "
          f"{len(rows) - len(ran)} not run (skipped or not exported)")
    sys.exit(0 if ok == len(ran) else 1)


if __name__ == "__main__":
    main()
