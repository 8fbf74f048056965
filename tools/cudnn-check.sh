#!/usr/bin/env bash
# The cudnn backend's checks and measurements on the GPU machine, in one device call (issue 4):
# build (through tools/gpu-check.sh's build stage), the cudnn tests, the algorithm explorer on unet-encoder
# layers and on a dilated and a strided layer, cudnn.auto vs cuda.implicit_gemm, and cudnn.auto vs PyTorch's
# F.conv2d (FP32 and TF32), then compute-sanitizer memcheck on the cudnn tests that run our own small kernels.
#
#   tools/cudnn-check.sh [RESULTS_DIR]       # from the repository root; device call with carry [".carry"]
#
# Every stage has a time limit so the whole script ends inside one 10-minute call; stage results go to
# RESULTS_DIR (default build-gpu/cudnn-check).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
RES=${1:-build-gpu/cudnn-check}
mkdir -p "$RES"
BUILD=${BUILD_DIR:-build-gpu}
CUDNN_ROOT=${CUDNN_ROOT:-/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn}
PY=${PY:-/opt/torch/.venv/bin/python}
T0=$(date +%s)
left() { echo $((${BUDGET:-560} - ($(date +%s) - T0))); }
# A stage gets its own limit, but never more than what is left of the budget.
lim() { local l; l=$(left); [ "$l" -lt "$1" ] && echo "$l" || echo "$1"; }

STAGES=build TARGETS="convscope_tests_kernels convscope_modules convscope-cli" BUILD_DIR="$BUILD" OUT=/tmp/gpu-check \
  CUDNN_ROOT="$CUDNN_ROOT" tools/gpu-check.sh 2>&1 | tail -8
[ -d "$ROOT/.carry/usr" ] && export LD_LIBRARY_PATH="$ROOT/.carry/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
[ -d "$CUDNN_ROOT/lib" ] && export LD_LIBRARY_PATH="$CUDNN_ROOT/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
BIN="$BUILD/bin"
CLI="$BIN/convscope-cli"
TESTS="$BIN/convscope_tests_kernels"
echo "== build done at $(($(date +%s) - T0)) s"
"$CLI" info 2>&1 | grep -A3 "^  cudnn" | head -4

echo "== cudnn tests"
timeout "$(lim 150)" "$TESTS" "[cudnn]" --durations yes >"$RES/tests.txt" 2>&1
echo "rc $?"; grep -E "^(test cases|All tests)|FAILED|SKIPPED" "$RES/tests.txt" | sort | uniq -c | head -20
grep -E "s: cudnn" "$RES/tests.txt" | head -10

echo "== algos (unet-encoder 64→64 @512² and 256→256 @128², fp32; then a dilated and a strided layer)"
cat >/tmp/dilated_strided.json <<'EOF'
{ "format": "convscope-network", "version": 1, "name": "dilated and strided",
  "input": { "batch": 4, "channels": 64, "height": 128, "width": 128, "source": "random:1" },
  "layers": [
    { "type": "conv2d", "name": "dilated_d2", "out_channels": 64, "kernel_size": [3, 3], "padding": [2, 2, 2, 2],
      "dilation": [2, 2], "init": { "kind": "he_uniform", "seed": 1 } },
    { "type": "conv2d", "name": "strided_s2_same", "out_channels": 128, "kernel_size": [3, 3], "stride": [2, 2],
      "padding": "same", "init": { "kind": "he_uniform", "seed": 2 } } ] }
EOF
{
  timeout "$(lim 60)" "$CLI" algos --suite unet-encoder --cases 0,1,5
  timeout "$(lim 40)" "$CLI" algos /tmp/dilated_strided.json
  timeout "$(lim 30)" "$CLI" algos --suite unet-encoder --cases 1 --math tf32
  timeout "$(lim 30)" "$CLI" algos --suite unet-encoder --cases 1 --option layout=nhwc
} >"$RES/algos.txt" 2>&1
cat "$RES/algos.txt"

echo "== bench cudnn.auto vs cuda.implicit_gemm (cases 1-3, reference cpu.im2col_gemm)"
timeout "$(lim 90)" "$CLI" bench --suite unet-encoder --backends cudnn.auto,cuda.implicit_gemm \
  --reference cpu.im2col_gemm --cases 1-3 --warmup 2 --repeat 10 >"$RES/bench.txt" 2>&1
tail -12 "$RES/bench.txt"

echo "== cudnn.auto vs PyTorch F.conv2d, all unet-encoder layers"
for math in fp32 tf32; do
  timeout "$(lim 60)" "$CLI" bench --suite unet-encoder --backends cudnn.auto --reference none --warmup 3 --repeat 20 \
    --math "$math" --json "/tmp/ours-$math.json" >/dev/null 2>&1
  timeout "$(lim 60)" "$PY" tools/torch_conv_bench.py --math "$math" --ours "/tmp/ours-$math.json"
done 2>&1 | tee "$RES/torch.txt"
echo "-- fp32 again with a 4 GiB workspace limit (default 1 GiB)" | tee -a "$RES/torch.txt"
timeout "$(lim 60)" "$CLI" bench --suite unet-encoder --backends cudnn.auto --reference none --warmup 3 --repeat 20 \
  --option workspace_limit=4G --json /tmp/ours-ws4g.json >/dev/null 2>&1
timeout "$(lim 60)" "$PY" tools/torch_conv_bench.py --math fp32 --ours /tmp/ours-ws4g.json 2>&1 | tee -a "$RES/torch.txt"

echo "-- fp32 with the bias as a separate cudnnAddTensor pass (--option fuse_bias=0)" | tee -a "$RES/torch.txt"
timeout "$(lim 60)" "$CLI" bench --suite unet-encoder --backends cudnn.auto --reference none --warmup 3 --repeat 20 \
  --option fuse_bias=0 --json /tmp/ours-fused.json >/dev/null 2>&1
timeout "$(lim 60)" "$PY" tools/torch_conv_bench.py --math fp32 --ours /tmp/ours-fused.json 2>&1 | tee -a "$RES/torch.txt"

echo "== NHWC vs NCHW (cudnn.auto, cases 1,5)"
timeout "$(lim 40)" "$CLI" bench --suite unet-encoder --backends cudnn.auto --reference none --cases 1,5 --warmup 2 \
  --repeat 10 --option layout=nhwc --json /tmp/nhwc.json 2>&1 | tail -5 | tee "$RES/nhwc.txt"
grep -o '"note": "[^"]*NHWC split[^"]*"' /tmp/nhwc.json | head -4 | tee -a "$RES/nhwc.txt"

SAN=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null | head -1)
if [ -n "$SAN" ] && [ "$(left)" -gt 40 ]; then
  echo "== compute-sanitizer memcheck: cudnn pooling and conv_transpose2d tests"
  timeout "$(lim 120)" "$SAN" --tool memcheck --error-exitcode 9 --print-limit 10 "$TESTS" \
    "[cudnn][pool],[cudnn][conv_transpose2d]" >"$RES/memcheck.txt" 2>&1
  echo "rc $?"; tail -4 "$RES/memcheck.txt"
fi
echo "== done in $(($(date +%s) - T0)) s"
