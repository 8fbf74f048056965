#!/usr/bin/env bash
# Nsight Compute on one 3×3 convolution layer (padding 1, the unet-encoder suite's shape) on the GPU machine: the
# kernels of one selection, one pass, their details pages as text. For the worklog in docs/PERFORMANCE.md: what
# bounds a kernel (pipe utilisation, stall reasons, shared-memory traffic), next to the bench's times.
#
#   tools/ncu-layer.sh CIN COUT SIZE [SELECTION] [MATH] [KERNEL_REGEX] [-- CLI_OPTIONS...]
#   e.g. tools/ncu-layer.sh 128 128 256 cuda.tensor_core fp16 tmaConv -- --option tc_tile=tma128x128
#
# Environment: BIN (default build-gpu/bin), BATCH (default 4), NCU (default /usr/local/cuda/bin/ncu),
# NCU_SECTIONS (default: speed of light, compute and memory workload, scheduler, warp states, occupancy, launch),
# OUT (default .), NCU_SOURCE=1 (also the SASS with each instruction's executions and stall samples, as CSV).
# Writes $OUT/ncu-<cin>-<cout>-<size>-<selection>-<math>.txt (and .sass.csv).
set -euo pipefail
[ $# -ge 3 ] || { sed -n 2,10p "$0"; exit 2; }
CIN=$1 COUT=$2 SIZE=$3
SEL=${4:-cuda.tensor_core} MATH=${5:-fp16} KREGEX=${6:-.}
shift $(($# < 6 ? $# : 6))
[ "${1:-}" = "--" ] && shift
BIN=${BIN:-build-gpu/bin} BATCH=${BATCH:-4} NCU=${NCU:-/usr/local/cuda/bin/ncu} OUT=${OUT:-.}
SECTIONS=${NCU_SECTIONS:-"SpeedOfLight ComputeWorkloadAnalysis MemoryWorkloadAnalysis SchedulerStats WarpStateStats Occupancy LaunchStats"}
NET=$(mktemp --suffix=.json)
trap 'rm -f "$NET"' EXIT
cat >"$NET" <<EOF
{"format": "convscope-network", "version": 1, "name": "ncu $CIN→$COUT @$SIZE²",
 "input": {"batch": $BATCH, "channels": $CIN, "height": $SIZE, "width": $SIZE, "source": "random:7"},
 "layers": [{"type": "conv2d", "name": "conv", "out_channels": $COUT, "kernel_size": 3, "padding": 1}]}
EOF
ARGS=()
for s in $SECTIONS; do ARGS+=(--section "$s"); done
REPORT="$OUT/ncu-$CIN-$COUT-$SIZE-$SEL-$MATH.txt"
REP=()
if [ "${NCU_SOURCE:-0}" = 1 ]; then
  ARGS+=(--section SourceCounters --section WarpStateStats --import-source no)
  REP=(-o "${NET%.json}" -f)
fi
# One warm-up pass runs the kernels once before the profiled pass (cudnn.auto's race, the first launch's set-up).
"$NCU" "${ARGS[@]}" "${REP[@]}" -k "regex:$KREGEX" --launch-skip "${NCU_SKIP:-1}" --launch-count "${NCU_COUNT:-1}" \
  "$BIN/convscope-cli" run "$NET" --backends "$SEL" --math "$MATH" --reference none --warmup 1 --repeat 1 "$@" \
  >"$REPORT" 2>&1 || { tail -20 "$REPORT"; exit 1; }
if [ ${#REP[@]} -gt 0 ]; then
  "$NCU" -i "${NET%.json}.ncu-rep" --page source --csv --print-source sass >"${REPORT%.txt}.sass.csv" 2>&1
  "$NCU" -i "${NET%.json}.ncu-rep" --page details --print-details all >"$REPORT" 2>&1
  rm -f "${NET%.json}.ncu-rep"
fi
grep -E "^  [a-zA-Z_0-9].*\(|Duration|Compute \(SM\) Throughput|Memory Throughput|Issue Slots Busy|Executed Ipc A|No Eligible|Achieved Occupancy|Registers Per|Shared Memory Configuration Size|L1/TEX Hit|Mem Pipes Busy|Stall" "$REPORT" | head -60
