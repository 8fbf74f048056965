#!/usr/bin/env bash
# The autoencoder lecture's interpolation workload on the GPU machine (issue 18): 50 chair variants, every ordered
# pair, 11 steps (26,950 decoder runs), batched and one by one, on the GPU backends in full and on the CPU backends for
# the first 100 pairs (1,100 decoder runs: the whole workload on cpu.* would take most of a device call), then the same
# in PyTorch eager. Run after tools/gpu-check.sh's build stage (BUILD_DIR as there), from the repository root.
set -uo pipefail
BIN=${BUILD_DIR:-build-gpu}/bin
OUT=${OUT:-.}
PY=${TORCH_PYTHON:-/opt/torch/.venv/bin/python}
NET=resources/networks/autoencoder3d.json
export LD_LIBRARY_PATH="$PWD/.carry/usr/lib/x86_64-linux-gnu:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
echo "== GPU backends, the whole workload"
timeout 200 "$BIN/convscope-cli" interpolate "$NET" --lecture --both --backends cudnn.auto,cuda.implicit_gemm,cuda.direct \
  2>&1 | tee "$OUT/lecture-gpu.log" | tail -20
echo "== CPU backends, the first 100 pairs"
timeout 200 "$BIN/convscope-cli" interpolate "$NET" --lecture --both --pairs 100 --backends cpu.im2col_gemm,cpu.tap_gemm \
  2>&1 | tee "$OUT/lecture-cpu.log" | tail -20
echo "== PyTorch eager"
timeout 120 "$PY" tools/torch_lecture_bench.py --device cuda 2>&1 | tee "$OUT/lecture-torch-cuda.log" | tail -8
timeout 120 "$PY" tools/torch_lecture_bench.py --device cpu --pairs 100 2>&1 | tee "$OUT/lecture-torch-cpu.log" | tail -8
