#!/usr/bin/env bash
# One script for the GPU machine (one device call): configure with CUDA and cuDNN, build, run the GPU tests,
# run them again under compute-sanitizer (memcheck, racecheck, initcheck, synccheck), drive the injected GPU faults
# through the CLI, run the benchmarks, print a short table last.
#
#   tools/make-carry.sh            # here, once: header-only deps + OpenBLAS into the git-ignored .carry/
#   tools/gpu-check.sh             # there, from the repository root (device call with carry [".carry"])
#
# Environment:
#   CUDNN_ROOT   cuDNN root (default: the PyTorch wheel's, /opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn)
#   NCCL_ROOT    NCCL root for data parallel (default: the PyTorch wheel's .../site-packages/nvidia/nccl when it
#                exists, else CMake finds the toolkit's)
#   BUILD_DIR    build folder (default build-gpu)
#   STAGES       which stages, default "build test sanitize faults bench"; "tc" (issue 20: Tensor Core modes, see TC_PARTS
#                below the onnx stage), "onnx" (issue 17: ONNX's backend tests on the
#                GPU backends, ResNet-18 through ONNX at batch 32 against PyTorch and onnxruntime), "skip" (issue 16: the cross-backend test on
#                the GPU, the ResNet example against PyTorch, add/concat bandwidth) and "small" (issue 9's goal 6: LeNet-5 at batch 1,
#                eager with and without the launch gate, graph mode, and each kernel's duration under ncu) and "train" (issue
#                33: the training step of ResNet-18 b32 and the DCGAN loop beside PyTorch eager, in each mode of
#                TRAIN_MATH (fp32 by default; e.g. "fp32 tf32 fp16 bf16", about 25 s a mode), on TRAIN_BACKENDS (default
#                cudnn.auto and our fastest kernels in the mode), a note a network and mode with the ratios) are
#                extra; "tensor" (issue 30: bench --suite tensor-ops against the copy bandwidth on the GPU and every CPU core,
#                DeepLabV3 b8 512² against PyTorch eager) is extra too; so is "zoo" (issue 30: tools/model_zoo_check.py,
#                every torchvision model against onnxruntime on ZOO_BACKENDS (default cuda.implicit_gemm,cudnn.auto), ZOO_JOBS
#                shards at once (default 4: the exports and onnxruntime are CPU work), ZOO_MODELS a comma list to run
#                instead of all, ZOO_TIMEOUT the seconds the stage may take (default 300), ZOO_DIR the exported models
#                (default /tmp/convscope-zoo: gigabytes, kept out of OUT)); TC_PARTS="compile" adds torch.compile (reduce-overhead) as issue 32's anchor on ResNet-18 b32, TC_PARTS="goals" issue 32's whole table (GOAL_NETS, GOAL_MATHS: see the part), TC_PARTS="layers" single layers over every Tensor Core tile and split (LAYER_MATHS, LAYER_TILES, LAYER_SPLITS). The sanitize stage alone can take most of
#                a 10-minute call: STAGES="build test" first, then STAGES="sanitize faults" (the build folder stays).
#                "ddp" (issue 33, on a 2-GPU machine, kind nvidia-h200-x2): data parallel on 2 GPUs against 1 GPU's
#                weights (the [ddp] test), LeNet-5 through `train --nproc-per-node 2`, and tools/ddp_anchor.py
#                (ResNet-18 b64 per GPU, PyTorch DDP against ConvScope on 1 and 2 GPUs; DDP_MATH="fp32 bf16 fp16" for
#                each math mode, fp32 alone by default; DDP_MODELS="resnet18 dcgan" adds the DCGAN loop, b64 per GPU):
#                STAGES="build ddp".
#   TEST_JOBS    the test stage's ctest -j (default 4: the suite passed 300 s run one at a time); TEST_TIMEOUT its
#                seconds (default 300); TEST_EXCLUDE a ctest -E regex; TEST_TRAIN=0 leaves out its two training runs
#   "cross"      (extra stage) the cross-backend test alone, filtered by CROSS_BACKENDS and CROSS_OPS (see the stage)
#   SANITIZER_TOOLS     default "memcheck racecheck initcheck synccheck"
#   SHARD        the sanitize stage's shards, by Catch2 tag (default all: cuda-conv2d cuda-tensor-core cuda-other
#                cudnn-storage cudnn-other volume rest cross-cuda cross-cudnn; racecheck runs the cuda-* ones only; cross-*
#                run the cross-backend test's FP32 cases on that backend). Each runs under every
#                tool in SANITIZER_TOOLS with its own time limit; the summary lists the shards that ran clean and those
#                left for the next call
#   TAGS         one Catch2 test filter to run under the sanitizers instead of the shards (e.g. TAGS="[cuda][pool]")
#   SANITIZER_TIMEOUT   seconds per shard and tool (default 150)
#   SANITIZE_BUDGET     no shard starts unless it can end within this many seconds of the script's start (default 540)
#   SANITIZE_JOBS       shards run at once (default 1; e.g. 9 runs the whole memcheck suite in one call)
#   OUT          where logs and JSON results go (default $BUILD_DIR/gpu-check)
#   TARGETS      what to build (default: the GPU tests, the modules and the CLI; "all" for everything)
# Steps whose binaries are missing (e.g. a CLI without `bench`) are skipped with a note, never fatal; every
# stage has a time limit so the whole script ends inside one 10-minute device call.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
CARRY="$ROOT/.carry"
BUILD=${BUILD_DIR:-build-gpu}
STAGES=${STAGES:-"build test sanitize faults bench"}
OUT=${OUT:-$BUILD/gpu-check}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
CUDNN_ROOT=${CUDNN_ROOT:-/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn}
NCCL_ROOT=${NCCL_ROOT:-/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl}
[ -f "$NCCL_ROOT/include/nccl.h" ] || NCCL_ROOT="" # then CMake looks in the toolkit
export PATH=/usr/local/cuda/bin:$PATH
declare -a SUMMARY=()
note() { SUMMARY+=("$1"); echo "== $1"; }
has() { [[ " $STAGES " == *" $1 "* ]]; }
T0=$(date +%s)
# Inputs made on the fly live outside OUT: the device call returns at most 8 files, and the logs come first.
SCRATCH=$(mktemp -d)
elapsed() { echo $(($(date +%s) - T0)); }

echo "== machine"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>&1 | head -2
echo "nvcc: $(nvcc --version 2>/dev/null | tail -1)"; echo "cmake: $(cmake --version | head -1)"
echo "c++: $(c++ --version 2>/dev/null | head -1)"; echo "cores: $(nproc)"
SANITIZER=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer 2>/dev/null | head -1)
echo "compute-sanitizer: ${SANITIZER:-none}"; echo "cuDNN root: $CUDNN_ROOT ($(ls "$CUDNN_ROOT"/lib 2>/dev/null | tr '\n' ' '))"

HINTS=()
# tools/make-carry.sh packs the dependencies (the carry limit is 64 MiB): unpack them once.
if [ -f "$CARRY/usr.tar.xz" ] && [ ! -d "$CARRY/usr" ]; then
  tar -xJf "$CARRY/usr.tar.xz" -C "$CARRY" && echo "unpacked .carry/usr.tar.xz"
fi
if [ -f "$CARRY/onnx-testdata.tar.xz" ] && [ ! -d "$CARRY/onnx-testdata" ]; then
  mkdir -p "$CARRY/onnx-testdata" && tar -xJf "$CARRY/onnx-testdata.tar.xz" -C "$CARRY/onnx-testdata"
fi
[ -d "$CARRY/onnx-testdata/data" ] && export CONVSCOPE_ONNX_TESTDATA="$CARRY/onnx-testdata/data"
if [ -d "$CARRY/usr" ]; then
  # Carried OpenBLAS and its Fortran runtime: the linker (rpath-link) and the programs both need them.
  export LD_LIBRARY_PATH="$CARRY/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  HINTS=(-DCMAKE_PREFIX_PATH="$CARRY/usr" -DBLAS_LIBRARIES="$CARRY/usr/lib/x86_64-linux-gnu/libopenblas.so"
    -DCBLAS_INCLUDE_DIR="$CARRY/usr/include/openblas" -DSTB_INCLUDE_DIR="$CARRY/usr/include/stb")
else
  echo "note: no .carry/ (run tools/make-carry.sh first and carry it) — relying on system packages"
fi
# cuDNN's libraries live next to each other in the wheel; the loader must find them at run time. NCCL's too.
[ -d "$CUDNN_ROOT/lib" ] && export LD_LIBRARY_PATH="$CUDNN_ROOT/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
[ -n "$NCCL_ROOT" ] && [ -d "$NCCL_ROOT/lib" ] && export LD_LIBRARY_PATH="$NCCL_ROOT/lib:$LD_LIBRARY_PATH"
echo "NCCL root: ${NCCL_ROOT:-none set, the toolkit} ($(ls "$NCCL_ROOT"/lib 2>/dev/null | tr '\n' ' '))"
# The GPU machines' documentation requires NVLink multicast off (ConvScope sets it too when it is unset).
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}

if has build; then
  GEN=(); command -v ninja >/dev/null && GEN=(-G Ninja)
  if ! cmake -S . -B "$BUILD" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release -DCONVSCOPE_WITH_GUI=OFF -DCONVSCOPE_WITH_CUDA=ON \
      -DCMAKE_CUDA_ARCHITECTURES=90 -DCUDNN_ROOT="$CUDNN_ROOT" -DNCCL_ROOT="$NCCL_ROOT" "${HINTS[@]}" \
      >"$OUT/configure.log" 2>&1; then
    tail -40 "$OUT/configure.log"; note "configure: FAILED (see configure.log)"; exit 1
  fi
  grep -E "CUDA|cuDNN|NCCL|Tests|NVTX" "$OUT/configure.log" | grep -v "^--  *$" | head -14
  KEEP=(); [ ${#GEN[@]} -gt 0 ] && KEEP=(-- -k 0) # build every target that can be built, even if one fails
  TARGETS=${TARGETS:-"convscope_tests_kernels convscope_tests_kernels_common convscope_tests_backends convscope_modules convscope-cli"}
  TGT=(); [ "$TARGETS" != all ] && for t in $TARGETS; do TGT+=(--target "$t"); done
  if timeout 420 cmake --build "$BUILD" -j"$(nproc)" "${TGT[@]}" "${KEEP[@]}" >"$OUT/build.log" 2>&1; then
    note "build: ok ($(elapsed) s)"
  else
    grep -E "error|FAILED" "$OUT/build.log" | head -30
    note "build: FAILED, continuing with whatever was built (see build.log)"
  fi
fi

BIN="$BUILD/bin"
TESTS="$BIN/convscope_tests_kernels"
if has test; then
  if [ -x "$TESTS" ]; then
    # In parallel, but the cudnn training tests alone afterwards: cudnn.auto's training session picks its
    # convolution algorithms by cudnnFind's timings, which other processes on the GPU disturb, and a side-by-side
    # test against cpu.direct can then meet algorithms of larger rounding (FFT, Winograd) than its bounds are set for.
    # LeNet-5 under Adam failed at 1.3e-3 against 1e-3 in the first -j4 run, having passed in the serial run before;
    # that this was the cause is the likeliest reading, not yet confirmed by a serial rerun.
    serial="cudnn training"
    (cd "$BUILD" && timeout "${TEST_TIMEOUT:-300}" ctest -L gpu -E "${TEST_EXCLUDE:+$TEST_EXCLUDE|}$serial" \
      -j"${TEST_JOBS:-4}" --output-on-failure >"$OUT/ctest-gpu.log" 2>&1
      timeout 120 ctest -L gpu -R "$serial" ${TEST_EXCLUDE:+-E "$TEST_EXCLUDE"} --output-on-failure \
        >"$OUT/ctest-gpu-serial.log" 2>&1)
    cat "$OUT/ctest-gpu-serial.log" >>"$OUT/ctest-gpu.log" && rm -f "$OUT/ctest-gpu-serial.log"
    tail -25 "$OUT/ctest-gpu.log"
    grep -A30 "FAILED:" "$OUT/ctest-gpu.log" | head -60
    note "ctest -L gpu: $(grep -E 'tests passed|tests failed' "$OUT/ctest-gpu.log" | tr '\n' ' ')"
  else
    note "ctest -L gpu: skipped (no $TESTS)"
  fi
  # Issue 33: the training step on cudnn and on our kernels (cuda.implicit_gemm) beside cpu.direct, LeNet-5 on its ten
  # test digits; the table shows every layer's forward / backward-data / backward-weights / update on each, and the
  # last lines how far cudnn's and cuda's trained parameters are from cpu.direct's.
  if [ -x "$BIN/convscope-cli" ] && [ "${TEST_TRAIN:-1}" = 1 ]; then
    timeout 120 "$BIN/convscope-cli" train resources/networks/lenet5.json --batch 10 \
      --input tests/data/training/lenet5_sgd/input.npy --target tests/data/training/lenet5_sgd/target.npy \
      --loss ce --optimizer sgd --lr 0.05 --momentum 0.9 --steps 20 --backends cpu.direct,cudnn.auto,cuda.implicit_gemm \
      >"$OUT/train-lenet5.log" 2>&1
    rc=$?
    tail -60 "$OUT/train-lenet5.log"
    note "train lenet5 on cpu.direct,cudnn.auto,cuda.implicit_gemm: rc $rc, $(grep -E '^loss|param' "$OUT/train-lenet5.log" | tail -3 | tr '\n' ' ')"
    # Our backward-weights against cuDNN's on the unet-encoder suite's network (batch 16, 128², MSE toward a random
    # target of the output's shape [16, 128, 32, 32]; input and target written with the torch venv's numpy).
    PY=${TORCH_PYTHON:-/opt/torch/.venv/bin/python}
    if "$PY" -c "import numpy as np; g = np.random.default_rng(0)
np.save('$SCRATCH/unet-input.npy', g.standard_normal((16, 3, 128, 128), dtype=np.float32))
np.save('$SCRATCH/unet-target.npy', g.standard_normal((16, 128, 32, 32), dtype=np.float32))" 2>/dev/null; then
      timeout 150 "$BIN/convscope-cli" train resources/networks/unet_encoder_block.json --batch 16 \
        --input "$SCRATCH/unet-input.npy" --target "$SCRATCH/unet-target.npy" --loss mse --optimizer sgd --lr 0.01 \
        --momentum 0.9 --steps 10 --warmup 2 \
        --backends cudnn.auto,cuda.implicit_gemm --report "$OUT/train-unet.md" >"$OUT/train-unet.log" 2>&1
      rc=$?
      tail -40 "$OUT/train-unet.log"
      note "train unet_encoder_block b16 on cudnn.auto,cuda.implicit_gemm: rc $rc (per-layer backward-weights in train-unet.md)"
    fi
  fi
fi

# The cross-backend test alone, filtered (CROSS_BACKENDS, e.g. "cuda,cudnn"; CROSS_OPS, e.g. "resize,softmax"): the
# check of a changed kind on every GPU algorithm and math mode in a few seconds.
if has cross; then
  if [ -x "$BIN/convscope_tests_backends" ]; then
    CONVSCOPE_TEST_BACKEND=${CROSS_BACKENDS:-cuda,cudnn} CONVSCOPE_TEST_OP=${CROSS_OPS:-} timeout 240 \
      "$BIN/convscope_tests_backends" "[cross_backend]" >"$OUT/cross.log" 2>&1
    rc=$?
    grep -B4 -A14 "FAILED:" "$OUT/cross.log" | head -60
    note "cross-backend on ${CROSS_BACKENDS:-cuda,cudnn} (${CROSS_OPS:-every kind}): rc $rc, $(grep -E "All tests passed|assertions" "$OUT/cross.log" | tail -1)"
  fi
fi

# Issue 16 (skip connections): the cross-backend test on the GPU backends (label unit, so ctest -L gpu leaves it out),
# the ResNet basic-block example at batch 64 against PyTorch eager FP32, and add / concat bandwidth on 256 MiB tensors.
if has skip; then
  if [ -x "$BIN/convscope_tests_backends" ]; then
    timeout 240 "$BIN/convscope_tests_backends" "[cross_backend]" >"$OUT/cross-backend.log" 2>&1
    rc=$?
    grep -E "FAILED|SKIPPED|with expansion" "$OUT/cross-backend.log" | head -20
    note "cross-backend test (cuda, cudnn, cpu, onednn): rc $rc, $(grep -E "All tests passed|test cases" "$OUT/cross-backend.log" | tail -1)"
  fi
  PY=${TORCH_PYTHON:-/opt/torch/.venv/bin/python}
  if [ -x "$PY" ] && [ -x "$BIN/convscope-cli" ]; then
    timeout 240 "$PY" tools/torch_graph_bench.py --cli "$BIN/convscope-cli" --net resources/networks/resnet_basic_blocks.json \
      --batch 64 --backends cudnn.auto,cuda.implicit_gemm,cuda.winograd,cudnn.auto+fused,cuda.implicit_gemm+fused,cuda.winograd+fused \
      --bandwidth 256 >"$OUT/skip-bench.log" 2>&1
    cat "$OUT/skip-bench.log" | tail -30
    while read -r line; do note "skip bench: $line"; done < <(grep -E "x PyTorch|GB/s" "$OUT/skip-bench.log" | sed 's/  */ /g')
  fi
fi

# Issue 17 (ONNX): ONNX's backend tests on the GPU backends, and ResNet-18 exported to ONNX by ConvScope and imported
# back, at batch 32, 224², against PyTorch eager FP32 (cudnn.benchmark) and onnxruntime's CUDA provider if it is here.
if has onnx; then
  if timeout 300 cmake --build "$BUILD" -j"$(nproc)" --target convscope_tests_onnx >"$OUT/build-onnx.log" 2>&1; then
    # With the importer's general Einsum cases on every backend ([einsum]: label unit, so the test stage leaves it out).
    timeout 300 "$BIN/convscope_tests_onnx" "[conformance],[einsum]" >"$OUT/onnx-conformance.log" 2>&1
    grep -E "^FAILED|ONNX backend tests on|SKIPPED|FAILED:|^test cases:|^All tests passed" "$OUT/onnx-conformance.log" \
      | head -20
    while read -r line; do note "$line"; done < <(grep -E "ONNX backend tests on|SKIPPED|^test cases:|^All tests passed" \
      "$OUT/onnx-conformance.log")
  else
    grep -E "error|not found|No rule" "$OUT/build-onnx.log" | head -10
    note "onnx: convscope_tests_onnx did not build (no ONNX in this configure? see build-onnx.log)"
  fi
  PY=${TORCH_PYTHON:-/opt/torch/.venv/bin/python}
  "$PY" -c "import torch, sys; print('python', sys.version.split()[0], 'torch', torch.__version__)" 2>&1 | head -1
  for m in torchvision onnx onnxruntime; do
    "$PY" -c "import $m; print('$m', $m.__version__)" 2>&1 | tail -1
  done
  if [ -x "$BIN/convscope-cli" ]; then
    "$BIN/convscope-cli" export resources/networks/resnet18.json "$OUT/resnet18.onnx" | tail -1
    timeout 300 "$PY" tools/torch_graph_bench.py --cli "$BIN/convscope-cli" --net resources/networks/resnet18.json \
      --model "$OUT/resnet18.onnx" --batch 32 --warmup 5 --repeat 20 \
      --backends cudnn.auto,cudnn.auto+fused,cuda.implicit_gemm,cuda.implicit_gemm+fused,cuda.winograd+fused \
      >"$OUT/onnx-resnet18.log" 2>&1
    tail -12 "$OUT/onnx-resnet18.log"
    while read -r line; do note "resnet18.onnx b32: $line"; done < <(grep -E " ms" "$OUT/onnx-resnet18.log" | sed 's/  */ /g')
    rm -f "$OUT/resnet18.onnx"
    # Six torchvision architectures (seeded random weights, exported here) on the GPU backends against onnxruntime,
    # or PyTorch where onnxruntime is not installed.
    if [ "${ONNX_TORCHVISION:-1}" = 0 ]; then
      note "torchvision models: skipped (ONNX_TORCHVISION=0)"
    elif "$PY" -c "import torchvision" 2>/dev/null; then
      timeout 300 "$PY" tools/torchvision_onnx_check.py --cli "$BIN/convscope-cli" --out "$BUILD/torchvision" \
        --backends cudnn.auto,cuda.implicit_gemm,cuda.direct >"$OUT/onnx-torchvision.log" 2>&1
      tail -22 "$OUT/onnx-torchvision.log"
      note "torchvision models: $(grep -E "worst relative" "$OUT/onnx-torchvision.log" || tail -1 "$OUT/onnx-torchvision.log")"
    else
      note "torchvision models: skipped (no torchvision in $PY)"
    fi
  fi
fi

# Issue 20 (Tensor Cores): the cross-backend sweep in tf32/fp16/bf16 against FP32, the unet-encoder layers in each
# mode on cudnn.auto and cuda.tensor_core against PyTorch in the same dtype (channels_last, cudnn.benchmark), VGG-16 at
# batch 8 and ResNet-18 at batch 32 in every mode against PyTorch eager, LeNet-5 at batch 1 (small work).
# TC_PARTS picks parts (default "sweep unet vgg resnet lenet").
if has tc; then
  PY=${TORCH_PYTHON:-/opt/torch/.venv/bin/python}
  PARTS=${TC_PARTS:-"sweep unet vgg resnet lenet"}
  part() { [[ " $PARTS " == *" $1 "* ]]; }
  if part sweep && [ -x "$BIN/convscope_tests_backends" ]; then
    timeout 240 "$BIN/convscope_tests_backends" "[math]" >"$OUT/tc-sweep.log" 2>&1
    grep -E "layer outputs checked|^FAILED|failed:|All tests|test cases" "$OUT/tc-sweep.log" | head -12
    note "tc sweep: $(grep -E 'All tests passed|test cases:' "$OUT/tc-sweep.log" | tail -1)"
  fi
  if part unet && [ -x "$BIN/convscope-cli" ]; then
    for m in ${TC_MATHS:-tf32 fp16 bf16}; do
      timeout 200 "$BIN/convscope-cli" bench --suite unet-encoder --backends ${TC_UNET_BACKENDS:-cudnn.auto,cuda.tensor_core} \
        --math "$m" --json "$OUT/tc-unet-$m.json" >"$OUT/tc-unet-$m.log" 2>&1
      tail -16 "$OUT/tc-unet-$m.log"
      # cudnn.auto against PyTorch (goal ≤ 1.05), then our Tensor Core kernel with the GEMM share (goals 0.8, 60%).
      timeout 120 "$PY" tools/torch_conv_bench.py --math "$m" --channels-last --ours "$OUT/tc-unet-$m.json" \
        >"$OUT/tc-unet-torch-$m.log" 2>&1
      tail -14 "$OUT/tc-unet-torch-$m.log"
      timeout 120 "$PY" tools/torch_conv_bench.py --math "$m" --channels-last --ours "$OUT/tc-unet-$m.json" \
        --selection cuda.tensor_core --gemm >"$OUT/tc-unet-torch-tc-$m.log" 2>&1
      tail -14 "$OUT/tc-unet-torch-tc-$m.log"
    done
  fi
  if part vgg && [ -x "$BIN/convscope-cli" ]; then
    timeout 420 "$PY" tools/torch_graph_bench.py --cli "$BIN/convscope-cli" --net tools/networks/vgg16.json --batch 8 \
      --warmup 5 --repeat 20 --maths fp32,tf32,fp16,bf16 \
      --backends ${TC_NET_BACKENDS:-cudnn.auto,cudnn.auto+fused,cuda.winograd+fused,cuda.tensor_core+fused} \
      >"$OUT/tc-vgg16.log" 2>&1
    tail -9 "$OUT/tc-vgg16.log"
  fi
  if part resnet && [ -x "$BIN/convscope-cli" ]; then
    timeout 300 "$PY" tools/torch_graph_bench.py --cli "$BIN/convscope-cli" --net resources/networks/resnet18.json \
      --batch 32 --warmup 5 --repeat 20 --maths fp32,tf32,fp16,bf16 \
      --backends ${TC_NET_BACKENDS:-cudnn.auto,cudnn.auto+fused,cuda.winograd+fused,cuda.tensor_core+fused} \
      >"$OUT/tc-resnet18.log" 2>&1
    tail -9 "$OUT/tc-resnet18.log"
  fi
  if part compile && [ -x "$BIN/convscope-cli" ]; then
    timeout 540 "$PY" tools/torch_graph_bench.py --cli "$BIN/convscope-cli" --net resources/networks/resnet18.json \
      --batch 32 --warmup 5 --repeat 20 --maths ${COMPILE_MATHS:-fp16,bf16,tf32,fp32} --compile \
      --backends ${TC_NET_BACKENDS:-cudnn.auto+fused,cuda.tensor_core+fused} >"$OUT/tc-compile-resnet18.log" 2>&1
    tail -9 "$OUT/tc-compile-resnet18.log"
  fi
  # Issue 32's whole-network table: each of GOAL_NETS (default "resnet18 resnet50 vgg16"; batch 32, 32, 8) in each of
  # GOAL_MATHS (default "fp16,bf16,tf32,fp32") against torch.compile (reduce-overhead, channels_last) and eager, our
  # kernels (cuda.tensor_core in the 16-bit modes and tf32, cuda.implicit_gemm and cuda.winograd in fp32; +fused) beside
  # cudnn.auto+fused. torch.compile compiles every network and mode anew: one network a call fits the 10 minutes.
  # tools/networks/resnet50.json is tools/make_resnet_example.py --depth 50.
  if part goals && [ -x "$BIN/convscope-cli" ]; then
    for net in ${GOAL_NETS:-resnet18 resnet50 vgg16}; do
      case $net in
        resnet18) file=resources/networks/resnet18.json; batch=32 ;;
        resnet50) file=tools/networks/resnet50.json; batch=32 ;;
        vgg16) file=tools/networks/vgg16.json; batch=8 ;;
        *) note "goals: unknown network $net (resnet18, resnet50, vgg16)"; continue ;;
      esac
      timeout "${GOAL_TIMEOUT:-540}" "$PY" tools/torch_graph_bench.py --cli "$BIN/convscope-cli" --net "$file" \
        --batch "$batch" --warmup 5 --repeat 20 --maths "${GOAL_MATHS:-fp16,bf16,tf32,fp32}" --compile \
        --backends cudnn.auto+fused,cuda.tensor_core+fused,cuda.implicit_gemm+fused,cuda.winograd+fused \
        >"$OUT/tc-goals-$net.log" 2>&1
      note "goals $net: rc $?"
      tail -8 "$OUT/tc-goals-$net.log"
    done
  fi
  # The plan's split and tile rules on single layers (tools/tc_layer_sweep.py; not a default part): ResNet's last
  # stage, its layer4 downsample and VGG-16's conv5 shape, every tile x split against cuDNN in fp16 and tf32.
  if part layers && [ -x "$BIN/convscope-cli" ]; then
    for net in last_stage7 downsample7 vgg_conv5; do
      timeout 200 "$PY" tools/tc_layer_sweep.py --cli "$BIN/convscope-cli" --net "tools/networks/$net.json" \
        --maths "${LAYER_MATHS:-fp16,tf32}" --tiles "${LAYER_TILES:-wg128x128,wg128x128r64,wg128x256,tma128x64,tma128x128}" \
        --splits "${LAYER_SPLITS:-1,2,3,4,5,6}" >"$OUT/tc-layers-$net.log" 2>&1
      note "layers $net: rc $?"
      grep -E "^\| (default|cudnn)" "$OUT/tc-layers-$net.log"
    done
  fi
  if part lenet && [ -x "$BIN/convscope-cli" ]; then
    for m in fp32 fp16; do
      "$BIN/convscope-cli" run resources/networks/lenet5.json --backends cuda.direct,cudnn.auto --math "$m" \
        --warmup 20 --repeat 200 >"$OUT/tc-lenet-$m.log" 2>&1
      grep -E "total" "$OUT/tc-lenet-$m.log" | while read -r line; do note "lenet5 b1 $m: $line"; done
    done
  fi
fi

# Issue 33: the training step against PyTorch eager in the same call (tools/torch_train_bench.py): ResNet-18 b32 at 224²
# (cross-entropy, SGD momentum 0.9) and the DCGAN tutorial's loop at batch 64, in each mode of TRAIN_MATH, one note a
# network and mode with every selection's ms a step and its ratio to PyTorch's: issue 33's table in one call (session
# 35 ran it so: about 25 s a mode).
if has train; then
  PY=${TORCH_PYTHON:-/opt/torch/.venv/bin/python}
  # TRAIN_MATH: one or more of fp32, tf32 (TF32 convolutions and GEMMs beside PyTorch's allow_tf32), fp16 and bf16
  # (mixed precision beside PyTorch's autocast, fp16 with GradScaler: in the DCGAN loop one scaler for both optimizers
  # on both sides), space-separated. TRAIN_BACKENDS: the selections (default cudnn.auto and our fastest kernels in
  # that mode: cuda.winograd in fp32, cuda.tensor_core otherwise).
  TRAIN_MATH=${TRAIN_MATH:-fp32}
  if [ -x "$BIN/convscope-cli" ]; then
    "$PY" -c "import numpy as np; r = np.random.default_rng(0); np.save('$SCRATCH/train_x.npy', r.standard_normal((32, 3, 224, 224)).astype(np.float32)); np.save('$SCRATCH/train_y.npy', r.integers(0, 1000, 32).astype(np.float32))"
    ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f×", a / b; else printf "?" }'; }
    # PyTorch's ms a step for model $1 in mode $2, from tools/torch_train_bench.py's JSON lines.
    torchMs() { grep "\"model\": \"$1\"" "$OUT/torch-train-$2.jsonl" | tail -1 | sed 's/.*step_ms": \([0-9.]*\).*/\1/'; }
    for m in $TRAIN_MATH; do
      if [ "$(elapsed)" -gt "${TRAIN_BUDGET:-500}" ]; then
        note "train $m: not run (no time left in this call; TRAIN_BUDGET=${TRAIN_BUDGET:-500} s)"
        continue
      fi
      ours=cuda.tensor_core
      [ "$m" = fp32 ] && ours=cuda.winograd
      sels=${TRAIN_BACKENDS:-cudnn.auto,$ours}
      timeout 200 "$PY" tools/torch_train_bench.py --device cuda --model resnet18:32 --model dcgan:64 --warmup 3 \
        --repeat 10 --math "$m" >"$OUT/torch-train-$m.jsonl" 2>&1
      tr=$(torchMs resnet18 "$m")
      tg=$(torchMs dcgan "$m")
      r18="train resnet18 b32 $m: PyTorch eager ${tr:-failed}"
      gan="gan dcgan b64 $m: PyTorch eager ${tg:-failed}"
      for sel in ${sels//,/ }; do
        timeout 120 "$BIN/convscope-cli" train resources/networks/resnet18.json --input "$SCRATCH/train_x.npy" \
          --target "$SCRATCH/train_y.npy" --loss ce --optimizer sgd --momentum 0.9 --steps 10 --warmup 3 --math "$m" \
          --backends "$sel" >"$SCRATCH/train-$m-$sel.log" 2>&1 || tail -3 "$SCRATCH/train-$m-$sel.log"
        t=$(grep -E 'wall clock' "$SCRATCH/train-$m-$sel.log" | head -1 | sed 's/.*wall clock \([0-9.]*\) ms.*/\1/')
        r18="$r18; $sel ${t:-failed} ($(ratio "$t" "$tr"))"
        timeout 120 "$BIN/convscope-cli" gan resources/networks/dcgan_generator.json \
          resources/networks/dcgan_discriminator.json --batch 64 --steps 10 --warmup 3 --math "$m" --backends "$sel" \
          --report "$SCRATCH/gan-$m-$sel.md" >"$SCRATCH/gan-$m-$sel.log" 2>&1 || tail -3 "$SCRATCH/gan-$m-$sel.log"
        t=$(grep -E '^\| step \(wall clock\)' "$SCRATCH/gan-$m-$sel.md" 2>/dev/null | awk -F'|' '{gsub(/ /, "", $3); print $3}')
        gan="$gan; $sel ${t:-failed} ($(ratio "$t" "$tg"))"
      done
      note "$r18 (ms a step, wall clock)"
      note "$gan (median wall clock)"
    done
  fi
fi

if has tensor; then
  # Issue 30's speed goals: the memory-bound kinds (bench --suite tensor-ops: transpose, resize, and whatever the suite
  # holds) against each backend's copy bandwidth measured in the same run, on the GPU and on every CPU core; then
  # DeepLabV3 (MobileNetV3) at batch 8, 512², whole pass, PyTorch eager against cudnn.auto and our kernels.
  PY=${TORCH_PYTHON:-/opt/torch/.venv/bin/python}
  if [ -x "$BIN/convscope-cli" ]; then
    for sels in "${TENSOR_GPU-cudnn.auto,cuda.auto}" "${TENSOR_CPU-cpu.im2col_gemm,onednn.auto}"; do
      [ -n "$sels" ] || continue # TENSOR_GPU= or TENSOR_CPU= (empty) leaves that half out
      timeout 200 "$BIN/convscope-cli" bench --suite tensor-ops --backends "$sels" --warmup 2 --repeat 10 \
        >"$OUT/tensor-ops-${sels%%,*}.log" 2>&1
      note "bench tensor-ops on $sels: rc $?"
      grep -E "GB/s|rel L2|failed|unsupported" "$OUT/tensor-ops-${sels%%,*}.log" | grep -v "^CPU:"
    done
    [ "${TENSOR_MODEL:-1}" = 1 ] && timeout 240 "$PY" tools/torch_model_bench.py --cli "$BIN/convscope-cli" --model deeplabv3_mobilenet_v3_large \
      --batch 8 --size 512 --out "$OUT/model-bench" 2>&1 | tail -12 | tee "$OUT/deeplabv3.log"
    [ "${TENSOR_MODEL:-1}" = 1 ] && note "deeplabv3 b8 512²: $(grep -E "best" "$OUT/deeplabv3.log")"
  fi
fi

if has zoo; then
  # Issue 30's model zoo: every model of torchvision's classification, segmentation and video catalogues (plus the
  # script's own U-Net and FPN neck), seeded random weights, the smallest input each takes, exported to ONNX and run
  # by onnxruntime and by ConvScope on each selection. The catalogue is dealt round-robin to ZOO_JOBS processes; every
  # row a process prints goes to its log, so a shard cut by the time limit still reports what it finished.
  PY=${TORCH_PYTHON:-/opt/torch/.venv/bin/python}
  if [ -x "$BIN/convscope-cli" ]; then
    models=${ZOO_MODELS:-$(cd tools && "$PY" -c "import model_zoo_check as m; print(','.join(m.catalogue()))" 2>/dev/null)}
    jobs=${ZOO_JOBS:-4}
    IFS=',' read -r -a all <<<"$models"
    for ((j = 0; j < jobs; j++)); do
      part=()
      for ((k = j; k < ${#all[@]}; k += jobs)); do part+=("${all[k]}"); done
      [ ${#part[@]} -gt 0 ] || continue
      (IFS=','; export OMP_NUM_THREADS=$(($(nproc) / jobs > 0 ? $(nproc) / jobs : 1))
        exec timeout "${ZOO_TIMEOUT:-300}" "$PY" tools/model_zoo_check.py --cli "$BIN/convscope-cli" \
        --out "${ZOO_DIR:-/tmp/convscope-zoo}" --backends "${ZOO_BACKENDS:-cuda.implicit_gemm,cudnn.auto}" --models "${part[*]}" \
        --timeout 120 --json "$OUT/zoo-$j.json" >"$OUT/zoo-$j.log" 2>&1) &
    done
    wait
    # One log and one JSON file: the device call returns at most 8 files, and per-shard files were lost that way.
    cat "$OUT"/zoo-[0-9]*.log >"$OUT/zoo.log" && rm -f "$OUT"/zoo-[0-9]*.log
    "$PY" -c "import json,sys; print(json.dumps(sum((json.load(open(f)) for f in sys.argv[1:]), []), indent=1))" \
      "$OUT"/zoo-[0-9]*.json >"$OUT/zoo.json" 2>/dev/null && rm -f "$OUT"/zoo-[0-9]*.json
    grep -vE "^model |runs within" "$OUT/zoo.log" | sort
    note "zoo: $(grep -cE " ok$" "$OUT/zoo.log") runs ok, $(grep -cE "  (mismatch|failed|refused)" "$OUT/zoo.log") not, of ${#all[@]} models (zoo.log, zoo.json)"
  fi
fi

if has sanitize; then
  # Under compute-sanitizer the whole GPU suite does not finish in one 10-minute device call (memcheck reached 54 test
  # cases, racecheck 8, before a 170 s cap), so it runs in shards by Catch2 tag, each under its own time limit
  # (SANITIZER_TIMEOUT), and the summary says which shards ran clean. The shards cover every GPU test but the
  # exclusions: [wide] (same kernels, 100x the instrumented work), [fault] (the injected faults are deliberate:
  # memcheck would rightly report the null store), [calibrate] and the hidden [.bench] (they time the device:
  # meaningless under instrumentation). `rest` takes every test none of the others names, so a new tag is not missed.
  # One call: e.g. STAGES=sanitize SANITIZER_TOOLS=memcheck SHARD="cuda-conv2d cuda-tensor-core"; the note at the end
  # names the shards left for the next call. With SANITIZE_JOBS=9 the shards run at once: build and the whole memcheck
  # suite took one 312 s call on the H200 (the longest shard, cuda-tensor-core, 192 s; 2026-11-28).
  EXCLUDE='~[wide]~[fault]~[calibrate]~[.bench]'
  ALL_SHARDS="cuda-conv2d cuda-tensor-core cuda-other cudnn-storage cudnn-other volume rest cross-cuda cross-cudnn"
  shard_filter() {
    case $1 in
      cuda-conv2d) echo "[cuda][conv2d]~[tensor_core]$EXCLUDE" ;;
      cuda-tensor-core) echo "[cuda][tensor_core]$EXCLUDE" ;;
      cuda-other) echo "[cuda]~[conv2d]~[tensor_core]$EXCLUDE" ;;
      cudnn-storage) echo "[cudnn][storage]$EXCLUDE" ;;
      cudnn-other) echo "[cudnn]~[storage]$EXCLUDE" ;;
      volume) echo "[volume]~[cuda]~[cudnn]$EXCLUDE" ;;
      rest) echo "~[cuda]~[cudnn]~[volume]$EXCLUDE" ;;
      tags) echo "$TAGS" ;;
      cross-cuda | cross-cudnn) echo "[cross_backend]~[math]" ;;
      *) return 1 ;;
    esac
  }
  # The program a shard runs: the GPU tests, or for cross-* the cross-backend test (tests/backends: every kind on
  # random shapes, what the per-backend random sweeps were) on that one backend.
  shard_program() {
    case $1 in
      cross-cuda) echo "$BIN/convscope_tests_backends --backend cuda" ;;
      cross-cudnn) echo "$BIN/convscope_tests_backends --backend cudnn" ;;
      *) echo "$TESTS" ;;
    esac
  }
  # SHARD: which shards (default all); TAGS: one Catch2 filter of your own instead, run as the shard "tags".
  if [ -n "${TAGS:-}" ]; then SHARDS="tags"; else SHARDS=${SHARD:-$ALL_SHARDS}; fi
  SHARD_TIMEOUT=${SANITIZER_TIMEOUT:-150}
  # Shards start only while one more fits in the call (SANITIZE_BUDGET seconds from the script's start, default 540).
  BUDGET=${SANITIZE_BUDGET:-540}
  # SANITIZE_JOBS: shards run at once (default 1). The GPU has room for several instrumented processes and the host
  # 16 cores: with every shard at once the whole suite fits one call (each shard still under SANITIZER_TIMEOUT).
  JOBS=${SANITIZE_JOBS:-1}
  # One shard under one tool: its log, and its verdict line in a .result file read back in order below.
  run_shard() {
    local tool=$1 shard=$2 filter=$3 t0 rc errors cases verdict
    local log="$OUT/sanitizer-$tool-$shard.log"
    t0=$(date +%s)
    # No --leak-check: what it lists are the process-lifetime caches (the module's device arena pool, the
    # per-thread cuDNN and cuBLAS handles), freed when the context goes, not leaks (8 allocations, H200,
    # 2026-11-21).
    # shellcheck disable=SC2046 # the program and its options, split on purpose
    timeout "$SHARD_TIMEOUT" "$SANITIZER" --tool "$tool" --error-exitcode 9 --print-limit 20 \
      $(shard_program "$shard") "$filter" >"$log" 2>&1
    rc=$?
    # racecheck sums up in hazards ("RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)"), the
    # others in errors.
    errors=$(grep -m1 -oE "ERROR SUMMARY: [0-9]+ error|RACECHECK SUMMARY: [0-9]+ hazard" "$log" |
      grep -oE "[0-9]+" || echo "?")
    cases=$(grep -oE "test cases?: [0-9]+[^)]*|in [0-9]+ test cases?|No test cases matched.*" "$log" | tail -1)
    # `rest` is empty while every GPU test carries a named shard's tag: Catch2 then exits non-zero with "No test
    # cases matched", which is no failure.
    if [ "$shard" = rest ] && grep -q "No test cases matched" "$log"; then
      rc=0 cases="empty: every GPU test is in a named shard"
    fi
    case $rc in
      0) verdict="clean" ;;
      9) verdict="ERRORS" ;;
      124) verdict="TIMED OUT after $SHARD_TIMEOUT s" ;;
      *) verdict="rc $rc (a test failed?)" ;;
    esac
    echo "$rc|compute-sanitizer $tool [$shard] $filter: $verdict — $errors errors, ${cases:-no Catch summary}, $(($(date +%s) - t0)) s" \
      >"$OUT/sanitizer-$tool-$shard.result"
  }
  if [ -n "${SANITIZER:-}" ] && [ -x "$TESTS" ]; then
    clean=(); failed=(); skipped=(); started=()
    for tool in ${SANITIZER_TOOLS:-memcheck racecheck initcheck synccheck}; do
      for shard in $SHARDS; do
        if ! filter=$(shard_filter "$shard"); then
          note "compute-sanitizer: no shard \"$shard\" (shards: $ALL_SHARDS, or TAGS=...)"
          continue
        fi
        # racecheck instruments every shared-memory access (~50x slower): our own kernels only, which are the ones
        # that use shared memory; cuDNN's are NVIDIA's to check.
        if [ "$tool" = racecheck ] && [[ $shard != cuda-* && $shard != tags ]]; then
          continue
        fi
        while (($(jobs -rp | wc -l) >= JOBS)); do wait -n; done
        if (($(elapsed) + SHARD_TIMEOUT > BUDGET)); then
          skipped+=("$tool:$shard")
          continue
        fi
        rm -f "$OUT/sanitizer-$tool-$shard.result"
        run_shard "$tool" "$shard" "$filter" &
        started+=("$tool:$shard")
      done
    done
    wait
    for ts in "${started[@]}"; do
      tool=${ts%%:*} shard=${ts#*:}
      log="$OUT/sanitizer-$tool-$shard.log"
      tail -4 "$log"
      grep -B3 -A30 "FAILED:" "$log" | head -60
      result=$(cat "$OUT/sanitizer-$tool-$shard.result" 2>/dev/null || echo "?|compute-sanitizer $tool [$shard]: no result")
      case ${result%%|*} in
        0) clean+=("$ts") ;;
        124) failed+=("$ts (timed out)") ;;
        9) failed+=("$ts") ;;
        *) failed+=("$ts (rc ${result%%|*})") ;;
      esac
      note "${result#*|}"
    done
    note "compute-sanitizer: clean: ${clean[*]:-none}"
    ((${#failed[@]})) && note "compute-sanitizer: NOT clean: ${failed[*]}"
    if ((${#skipped[@]})); then
      left=$(printf '%s\n' "${skipped[@]}" | cut -d: -f2 | sort -u | tr '\n' ' ')
      note "compute-sanitizer: not run (no time left in this call): ${skipped[*]} — next call: STAGES=sanitize SHARD=\"${left% }\""
    fi
  else
    note "compute-sanitizer: skipped (tool or test binary missing)"
  fi
fi

if has faults; then
  # The fault-injection switch from the command line: each fault hits cuda.tiled only; cpu.direct and cuda.direct
  # must still print their rows, the CLI must exit with a status (1 or 3), never a signal.
  if [ -x "$BIN/convscope-cli" ]; then
    for fault in oom unsupported launch poison; do
      CONVSCOPE_FAULT_INJECT="$fault@cuda.tiled" timeout 60 "$BIN/convscope-cli" run resources/networks/lenet5.json \
        --backends cpu.direct,cuda.tiled,cuda.direct --warmup 1 --repeat 3 >"$OUT/fault-$fault.log" 2>&1
      rc=$?
      note "fault $fault@cuda.tiled: exit $rc$([ $rc -ge 128 ] && echo ' (KILLED BY A SIGNAL)'); $(grep -m1 -i "cuda.tiled" "$OUT/fault-$fault.log" | cut -c1-110)"
    done
    if [ -x "$TESTS" ]; then
      timeout 120 "$TESTS" "[fault]" >"$OUT/fault-tests.log" 2>&1
      note "fault-injection tests: rc $? ($(grep -E "All tests passed|test cases" "$OUT/fault-tests.log" | tail -1))"
    fi
  else
    note "faults: skipped (no convscope-cli)"
  fi
fi

CLI="$BIN/convscope-cli"
# Issue 33: data parallel on 2 GPUs (kind nvidia-h200-x2). The [ddp] test trains LeNet-5 through
# `train --nproc-per-node 2` and holds the weights to one GPU's on the whole batch; then the table of LeNet-5's ranks,
# and ResNet-18 b64 per GPU against PyTorch DDP on 1 and 2 GPUs (tools/ddp_anchor.py).
if has ddp; then
  echo "GPUs: $(nvidia-smi -L 2>/dev/null | wc -l)"
  if [ -x "$TESTS" ]; then
    # The one-GPU training test first: the session's gradients now live where data parallel can bucket them.
    timeout 120 "$TESTS" "[cudnn][train]~[ddp]" >"$OUT/ddp-train1.log" 2>&1
    note "cudnn training test (1 GPU): rc $?, $(grep -E 'All tests passed|test cases' "$OUT/ddp-train1.log" | tail -1)"
    timeout 240 "$TESTS" "[ddp]" -s >"$OUT/ddp-test.log" 2>&1
    rc=$?
    grep -E "SKIPPED|FAILED|passed|failed|with expansion|rel" "$OUT/ddp-test.log" | head -30
    note "ddp test (2 GPUs vs 1, LeNet-5, SGD and Adam): rc $rc, $(grep -E 'All tests passed|test cases' "$OUT/ddp-test.log" | tail -1)"
  fi
  if [ -x "$CLI" ]; then
    timeout 120 "$CLI" train resources/networks/lenet5.json --batch 10 \
      --input tests/data/training/lenet5_sgd/input.npy --target tests/data/training/lenet5_sgd/target.npy \
      --loss ce --optimizer sgd --lr 0.05 --momentum 0.9 --steps 20 --backends cudnn.auto --nproc-per-node 2 \
      --trace "$OUT/ddp-lenet5-trace.json" --report "$OUT/ddp-lenet5.md" >"$OUT/ddp-lenet5.log" 2>&1
    rc=$?
    tail -45 "$OUT/ddp-lenet5.log"
    note "train lenet5 --nproc-per-node 2: rc $rc, $(grep -E '^all-reduce' "$OUT/ddp-lenet5.log" | head -1)"
    PY=${TORCH_PYTHON:-/opt/torch/.venv/bin/python}
    if [ -x "$PY" ]; then
      for model in ${DDP_MODELS:-resnet18}; do
        for math in ${DDP_MATH:-fp32}; do
          log="$OUT/ddp-anchor-$model-$math.log"
          timeout 330 "$PY" tools/ddp_anchor.py --cli "$CLI" --model "$model" --gpus 1,2 --batch 64 --steps 20 \
            --warmup 5 --math "$math" >"$log" 2>&1
          rc=$?
          tail -20 "$log"
          while read -r line; do note "ddp anchor $model $math: $line"; done < <(grep -E "^(pytorch-ddp|convscope) " "$log")
          [ $rc -ne 0 ] && note "ddp anchor $model $math: rc $rc (see $(basename "$log"))"
        done
      done
    fi
  fi
fi

if has bench; then
  # Bandwidth of the memory-bound layers and TFLOP/s of the convolutions, straight from the sessions.
  if [ -x "$TESTS" ]; then
    timeout 150 "$TESTS" "[.bench]" -s 2>&1 | grep -E "^BENCH" | tee "$OUT/kernel-bench.txt"
  fi
  if [ -x "$CLI" ] && "$CLI" bench --help >/dev/null 2>&1; then
    # Issue 9's tables: cuDNN against our two fast algorithms, side by side in one run (ratios against cudnn.auto,
    # and the share of the cuBLAS SGEMM rate measured in the same run).
    SELS="cuda.implicit_gemm,cuda.winograd"
    "$CLI" info 2>/dev/null | grep -A1 "^  cudnn " | grep -q "^    available" && SELS="cudnn.auto,$SELS"
    timeout 240 "$CLI" bench --suite unet-encoder --backends "$SELS" --reference none --warmup 3 --repeat 20 \
      --json "$OUT/bench-unet.json" 2>&1 | grep -v "GPU at the end" | tee "$OUT/bench-unet.txt" | sed -n '/^case/,$p'
    note "bench unet-encoder: rc ${PIPESTATUS[0]}; $(grep -m1 't(cudnn.auto) / t(best' "$OUT/bench-unet.txt")"
    grep -E "GEMM rate measured|% of it" "$OUT/bench-unet.txt" | while read -r l; do note "  $l"; done
    timeout 120 "$CLI" bench --suite weak-shapes --backends "$SELS" --reference none --warmup 5 --repeat 100 \
      --json "$OUT/bench-weak.json" 2>&1 | grep -v "GPU at the end" | tee "$OUT/bench-weak.txt" | sed -n '/^case/,$p'
    note "bench weak-shapes: rc ${PIPESTATUS[0]}; $(grep -m1 't(cudnn.auto) / t(best' "$OUT/bench-weak.txt")"
  else
    note "convscope-cli bench: skipped (not built yet)"
  fi
fi

if has small; then
  # Goal 6: per-layer time on LeNet-5 at batch 1. Eager with the launch gate (the default), without it (the host's
  # launch rate shows), and the CUDA Graph replay; then every kernel's own duration from ncu, which sees no gaps.
  if [ -x "$CLI" ]; then
    L5SELS=${L5SELS:-cuda.implicit_gemm,cudnn.auto}
    # (The slowest-layer note reads the first selection's ms column, six fields from the end with two selections.)
    for mode in gate nogate graph; do
      args=(); [ $mode = nogate ] && args=(--option launch_gate=0); [ $mode = graph ] && args=(--graph)
      timeout 90 "$CLI" bench --suite lenet5 --backends "$L5SELS" --warmup 50 --repeat 400 "${args[@]}" \
        --json "$OUT/lenet-$mode.json" >"$OUT/lenet-$mode.txt" 2>&1
      note "lenet5 $mode: rc $?; slowest layer $(awk '/^LeNet-5 /{if ($(NF-5)+0 > m) {m = $(NF-5)+0; l = $2}} END {print l, m * 1000, "µs"}' "$OUT/lenet-$mode.txt")$(grep -o 'cuda.implicit_gemm: CUDA Graph.*' "$OUT/lenet-$mode.txt" | sed 's/^/; /')"
      sed -n '/^case/,$p' "$OUT/lenet-$mode.txt" | cut -c1-170
    done
    NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
    if [ -n "$NCU" ]; then
      timeout 120 "$NCU" --clock-control none --metrics gpu__time_duration.sum --csv \
        "$CLI" run resources/networks/lenet5.json --backends cuda.implicit_gemm --warmup 0 --repeat 1 \
        >"$OUT/lenet-ncu.csv" 2>"$OUT/lenet-ncu.err"
      note "ncu lenet5 (cuda.implicit_gemm, one warm-up-free pass): rc $?"
      # Each kernel once per pass: the last pass's kernels, name and duration.
      python3 - "$OUT/lenet-ncu.csv" <<'PY' || tail -5 "$OUT/lenet-ncu.err"
import csv, sys
rows = [r for r in csv.DictReader(l for l in open(sys.argv[1]) if l.startswith('"'))
        if r.get("Metric Name") == "gpu__time_duration.sum"]
for r in rows[-14:]:
    print(f'{r["Metric Value"]:>8} {r["Metric Unit"]:<5} {r["Kernel Name"][:90]}')
PY
    else
      note "ncu: not found"
    fi
  fi
fi

echo
echo "================ summary ($(elapsed) s) ================"
for s in "${SUMMARY[@]}"; do echo "  $s"; done
if [ -s "$OUT/kernel-bench.txt" ]; then
  echo "---------------- kernels (median of the timed passes) ----------------"
  column -t -s '|' "$OUT/kernel-bench.txt" 2>/dev/null || cat "$OUT/kernel-bench.txt"
fi
