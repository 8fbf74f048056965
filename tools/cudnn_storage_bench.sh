#!/usr/bin/env bash
# Issue 20's cudnn goal on the GPU machine: `convscope-cli bench --suite unet-encoder --backends cudnn.auto` in each of
# tf32, fp16 and bf16 (tensors stored channels-last in that format; the layer time excludes the input conversion)
# against PyTorch's F.conv2d in the same dtype, channels_last, cudnn.benchmark (tools/torch_conv_bench.py), printing
# the ratio table per mode. Run after tools/gpu-check.sh has built the CLI (BUILD_DIR, default build-gpu).
#   MODES="tf32 fp16 bf16" OUT=dir tools/cudnn_storage_bench.sh
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BUILD=${BUILD_DIR:-build-gpu}
CLI="$BUILD/bin/convscope-cli"
PY=${TORCH_PYTHON:-/opt/torch/.venv/bin/python}
OUT=${OUT:-$BUILD/cudnn-storage}
mkdir -p "$OUT"
CUDNN_ROOT=${CUDNN_ROOT:-/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn}
[ -d "$CUDNN_ROOT/lib" ] && export LD_LIBRARY_PATH="$CUDNN_ROOT/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
[ -d .carry/usr ] && export LD_LIBRARY_PATH=".carry/usr/lib/x86_64-linux-gnu:$LD_LIBRARY_PATH"
for m in ${MODES:-tf32 fp16 bf16}; do
  echo "== $m"
  timeout 150 "$CLI" bench --suite unet-encoder --backends cudnn.auto --math "$m" --reference none --warmup 3 \
    --repeat 20 --json "$OUT/bench-$m.json" ${BENCH_ARGS:-} >"$OUT/bench-$m.txt" 2>&1
  echo "bench rc $?"
  timeout 120 "$PY" tools/torch_conv_bench.py --math "$m" --channels-last --ours "$OUT/bench-$m.json" \
    --warmup 5 --repeat 20 2>&1 | tee "$OUT/torch-$m.txt"
done
