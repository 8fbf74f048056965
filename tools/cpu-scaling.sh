#!/usr/bin/env bash
# The CPU benchmarks of issue 35 in one device call, on the GPU machine's 16 cores (or any machine): builds the CLI
# and the onednn module without CUDA or the GUI, then, in the same run,
#   1. PyTorch CPU (tools/torch_cpu_bench.py) and ConvScope on ResNet-18 b1 and b8 and VGG-16 b1 at 224², on every core
#      and on 2 threads (the development machine's count);
#   2. the lecture's decoder, batched (tools/torch_lecture_bench.py and bench --suite lecture-interpolation);
#   3. the memory-bound kinds on 256 MiB tensors (tools/networks/cpu_bandwidth.json) and VGG-16's batch-1 linear
#      layers, in GB/s beside the measured copy bandwidth;
#   4. the thread scaling of every fast CPU selection on ResNet-18 b1 (1, 2, 4, 8, 16 threads);
#   5. (train) the training step on every core: ResNet-18 b8 (cross-entropy, SGD momentum) and the DCGAN loop at batch
#      16, PyTorch eager (tools/torch_train_bench.py) beside `convscope-cli train` and `convscope-cli gan`;
# and prints a short table last. Every bench also prints the machine line (cores, threads, copy bandwidth, sgemm
# rate, OpenBLAS core). Logs and JSON land in $OUT (the device tool's folder) or build-cpu/cpu-scaling.
#
#   tools/make-carry.sh                      # here, once (OpenBLAS, oneDNN, the header-only deps)
#   device: tools/cpu-scaling.sh             # there, carry [".carry"]
#
# Environment: PYTHON (default /opt/torch/.venv/bin/python, else python3), STEPS ("build anchor lecture scaling"),
# SELECTIONS (default "cpu.tap_gemm,cpu.im2col_gemm,onednn.auto"), REPEAT (10); the train step's TRAIN_SELECTIONS
# (default cpu.im2col_gemm, comma-separated) and TRAIN_MATH (fp32, or bf16 for onednn.auto beside PyTorch's CPU
# autocast).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
CARRY="$ROOT/.carry"
BUILD=${BUILD_DIR:-build-cpu}
OUT=${OUT:-$BUILD/cpu-scaling}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
STEPS=${STEPS:-"build anchor lecture bandwidth scaling train"}
SELECTIONS=${SELECTIONS:-"cpu.tap_gemm,cpu.im2col_gemm,onednn.auto"}
REPEAT=${REPEAT:-10}
PYTHON=${PYTHON:-/opt/torch/.venv/bin/python}
[ -x "$PYTHON" ] || PYTHON=python3
CORES=$(nproc)
has() { [[ " $STEPS " == *" $1 "* ]]; }
T0=$(date +%s)
elapsed() { echo $(($(date +%s) - T0)); }
echo "== machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2), $CORES cores; $(c++ --version | head -1)"

HINTS=()
if [ -f "$CARRY/usr.tar.xz" ] && [ ! -d "$CARRY/usr" ]; then
  tar -xJf "$CARRY/usr.tar.xz" -C "$CARRY" && echo "unpacked .carry/usr.tar.xz"
fi
if [ -d "$CARRY/usr" ]; then
  export LD_LIBRARY_PATH="$CARRY/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  HINTS=(-DCMAKE_PREFIX_PATH="$CARRY/usr" -DBLAS_LIBRARIES="$CARRY/usr/lib/x86_64-linux-gnu/libopenblas.so"
    -DCBLAS_INCLUDE_DIR="$CARRY/usr/include/openblas" -DSTB_INCLUDE_DIR="$CARRY/usr/include/stb")
fi

if has build; then
  GEN=(); command -v ninja >/dev/null && GEN=(-G Ninja)
  if ! cmake -S . -B "$BUILD" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release -DCONVSCOPE_WITH_GUI=OFF -DCONVSCOPE_WITH_CUDA=OFF \
      -DCONVSCOPE_BUILD_TESTS=OFF "${HINTS[@]}" >"$OUT/configure.log" 2>&1; then
    tail -30 "$OUT/configure.log"; echo "== configure FAILED"; exit 1
  fi
  grep -iE "onednn|openblas" "$OUT/configure.log" | head -5
  if ! cmake --build "$BUILD" -j"$CORES" --target convscope-cli convscope_onednn >"$OUT/build.log" 2>&1; then
    tail -30 "$OUT/build.log"; echo "== build FAILED"; exit 1
  fi
  echo "== build ok ($(elapsed) s)"
fi
CLI="$BUILD/bin/convscope-cli"
"$CLI" info 2>&1 | head -12

bench() { # name threads network batch -> $OUT/<name>.json, log
  local name=$1 threads=$2 net=$3 batch=$4
  timeout 300 "$CLI" bench "$net" --batch "$batch" --backends "$SELECTIONS" --threads "$threads" --warmup 3 \
    --repeat "$REPEAT" --reference none --json "$OUT/$name.json" >"$OUT/$name.log" 2>&1 ||
    echo "== $name: bench failed (see $name.log)"
  grep -E "whole pass|^CPU:" "$OUT/$name.log"
}

if has anchor; then
  for t in "$CORES" 2; do
    echo "== PyTorch CPU, $t threads ($(elapsed) s)"
    timeout 240 "$PYTHON" tools/torch_cpu_bench.py --model resnet18:1 --model resnet18:8 --model vgg16:1 \
      --threads "$t" --repeat "$REPEAT" | tee "$OUT/torch_t$t.jsonl"
    echo "== ConvScope, $t threads ($(elapsed) s)"
    bench "resnet18_b1_t$t" "$t" resources/networks/resnet18.json 1
    bench "resnet18_b8_t$t" "$t" resources/networks/resnet18.json 8
    bench "vgg16_b1_t$t" "$t" tools/networks/vgg16.json 1
  done
fi

if has lecture; then
  echo "== the lecture's decoder, batched, 50 pairs ($(elapsed) s)"
  timeout 120 "$PYTHON" tools/torch_lecture_bench.py --device cpu --pairs 50 | tee "$OUT/torch_lecture.log"
  timeout 180 "$CLI" bench --suite lecture-interpolation --pairs 50 --backends "$SELECTIONS" 2>&1 |
    tee "$OUT/lecture.log" | tail -8
fi

if has bandwidth; then
  echo "== memory-bound kinds on 256 MiB tensors ($(elapsed) s)"
  bench "bandwidth_b1_t$CORES" "$CORES" tools/networks/cpu_bandwidth.json 1
fi

if has scaling; then
  for t in 1 2 4 8 16; do
    [ "$t" -le "$CORES" ] || continue
    echo "== scaling: ResNet-18 b1 on $t threads ($(elapsed) s)"
    bench "scaling_t$t" "$t" resources/networks/resnet18.json 1
  done
fi

if has train; then
  echo "== training step, $CORES threads ($(elapsed) s)"
  TRAIN_MATH=${TRAIN_MATH:-fp32} # bf16: PyTorch's CPU autocast beside onednn.auto's (TRAIN_SELECTIONS=onednn.auto)
  timeout 300 "$PYTHON" tools/torch_train_bench.py --model resnet18:8 --model dcgan:16 --device cpu --threads "$CORES" \
    --math "$TRAIN_MATH" | tee "$OUT/torch_train.jsonl"
  "$PYTHON" -c "import numpy as np; r = np.random.default_rng(0); np.save('$OUT/train_x.npy', r.standard_normal((8, 3, 224, 224)).astype(np.float32)); np.save('$OUT/train_y.npy', r.integers(0, 1000, 8).astype(np.float32))"
  TRAIN_SEL=${TRAIN_SELECTIONS:-cpu.im2col_gemm}
  timeout 300 "$CLI" train resources/networks/resnet18.json --input "$OUT/train_x.npy" --target "$OUT/train_y.npy" \
    --loss ce --optimizer sgd --momentum 0.9 --steps 5 --warmup 2 --backends "$TRAIN_SEL" --math "$TRAIN_MATH" \
    >"$OUT/train_resnet18.log" 2>&1 || echo "== train ResNet-18: failed (see train_resnet18.log)"
  grep -E "^step" "$OUT/train_resnet18.log"
  timeout 300 "$CLI" gan resources/networks/dcgan_generator.json resources/networks/dcgan_discriminator.json --batch 16 \
    --steps 5 --warmup 2 --backends "$TRAIN_SEL" --math "$TRAIN_MATH" --report "$OUT/gan_dcgan.json" \
    >"$OUT/gan_dcgan.log" 2>&1 ||
    echo "== gan: failed (see gan_dcgan.log)"
  grep -E "^step|^loss" "$OUT/gan_dcgan.log"
fi

echo "== summary ($(elapsed) s)"
# The device tool brings back a handful of files: everything in one archive besides the log.
tar -czf "$OUT/cpu-scaling-results.tgz" -C "$OUT" $(cd "$OUT" && ls *.json *.jsonl *.log 2>/dev/null) 2>/dev/null
"$PYTHON" - "$OUT" <<'PY'
import glob, json, os, sys
out = sys.argv[1]
def totals(path):
    d = json.load(open(path))
    return {s["selection"]: s["total_ms"]["median"] for s in d["cases"][0]["report"]["selections"]}, d.get("cpu_machine", {})
torch = {}
for f in glob.glob(os.path.join(out, "torch_t[0-9]*.jsonl")):
    for line in open(f):
        r = json.loads(line)
        torch[(r["model"], r["batch"], r["threads"])] = r["best_ms"]
rows = []
for f in sorted(glob.glob(os.path.join(out, "*_b*_t*.json"))):
    name = os.path.basename(f)[:-5]
    if name.startswith("bandwidth"):
        continue
    net, b, t = name.split("_")
    model = {"resnet18": "resnet18", "vgg16": "vgg16"}[net]
    sel, machine = totals(f)
    anchor = torch.get((model, int(b[1:]), int(t[1:])))
    rows.append((net, b, t, anchor, sel, machine))
if rows:
    sels = list(rows[0][4].keys())
    print("| network | threads | PyTorch CPU ms | " + " | ".join(f"{s} ms (× PyTorch)" for s in sels) + " |")
    print("|---|---|---|" + "---|" * len(sels))
    for net, b, t, anchor, sel, _ in rows:
        cells = [f"{sel[s]:.1f} ({sel[s] / anchor:.2f}×)" if anchor else f"{sel[s]:.1f}" for s in sels]
        print(f"| {net} {b} | {t[1:]} | {anchor if anchor is None else round(anchor, 1)} | " + " | ".join(cells) + " |")
def bandwidth(path, names=None):
    d = json.load(open(path))
    rep = d["cases"][0]["report"]
    copy = d.get("cpu_machine", {}).get("copy_bandwidth_gb_per_s", 0)
    for sel in rep["selections"]:
        for layer, meta in zip(sel.get("layers", []), rep["layers"]):
            if names and meta["type"] not in names:
                continue
            ms = layer["compute_ms"]["median"]
            gbs = (meta["bytes_read"] + meta["bytes_written"]) / ms / 1e6 if ms > 0 else 0
            print(f"| {sel['selection']} | {meta['name']} {meta['type']} | {ms:.2f} | {gbs:.1f} | {gbs / copy:.0%} |")
bw = glob.glob(os.path.join(out, "bandwidth_b1_t*.json"))
vgg = glob.glob(os.path.join(out, f"vgg16_b1_t{os.cpu_count()}.json"))
if bw or vgg:
    print("\nMemory-bound layers: bytes read + written per second, against the copy bandwidth measured in the same run")
    print("| selection | layer | ms | GB/s | of copy |")
    print("|---|---|---|---|---|")
    for p in bw:
        bandwidth(p)
    for p in vgg:
        bandwidth(p, {"linear"})
import re, statistics
tt = {}
if os.path.exists(os.path.join(out, "torch_train.jsonl")):
    for line in open(os.path.join(out, "torch_train.jsonl")):
        r = json.loads(line)
        tt[r["model"]] = r["step_ms"]
ours = {}
log = os.path.join(out, "train_resnet18.log")
if os.path.exists(log):
    m = re.search(r"^step ([0-9.]+) ms", open(log).read(), re.M)
    if m:
        ours["resnet18"] = float(m.group(1))
gj = os.path.join(out, "gan_dcgan.json")
if os.path.exists(gj):
    ours["dcgan"] = statistics.median(s["ms"]["step"] for s in json.load(open(gj))["step_results"])
if tt or ours:
    print(f"\nTraining step on {os.cpu_count()} cores, median ms (ConvScope's fast CPU path / PyTorch eager CPU)")
    print("| model | PyTorch ms | ConvScope ms | ratio |")
    print("|---|---|---|---|")
    for name, label in (("resnet18", "ResNet-18 b8, CE + SGD"), ("dcgan", "DCGAN pair b16, the tutorial's loop")):
        a, o = tt.get(name), ours.get(name)
        ratio = f"{o / a:.2f}×" if a and o else "–"
        print(f"| {label} | {a if a is None else round(a, 1)} | {o if o is None else round(o, 1)} | {ratio} |")
scal = sorted(glob.glob(os.path.join(out, "scaling_t*.json")), key=lambda p: int(p.split("_t")[-1][:-5]))
if scal:
    per = [(int(p.split("_t")[-1][:-5]),) + totals(p) for p in scal]
    sels = list(per[0][1].keys())
    print("\nResNet-18 b1, ms (speed-up over 1 thread)")
    print("| threads | " + " | ".join(sels) + " |")
    print("|---|" + "---|" * len(sels))
    base = per[0][1]
    for t, sel, _ in per:
        print(f"| {t} | " + " | ".join(f"{sel[s]:.1f} ({base[s] / sel[s]:.1f}×)" for s in sels) + " |")
    m = per[-1][2]
    if m:
        print(f"\ncopy bandwidth {m.get('copy_bandwidth_gb_per_s', 0):.1f} GB/s, sgemm {m.get('sgemm_gflop_per_s', 0):.0f} GFLOP/s, "
              f"OpenBLAS core {m.get('openblas_core')} ({m.get('openblas_threading')}), {m.get('logical_cores')} cores")
PY
