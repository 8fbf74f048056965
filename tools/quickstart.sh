#!/usr/bin/env bash
# ConvScope's two-command quick start on Debian 12.
#   tools/quickstart.sh         install what is missing, build, and open the window on LeNet-5 with the digit
#                               sample (or, without a display or GUI, run the CLI on it)
#   tools/quickstart.sh test    install what is missing, check the sources (tools/check-format.sh: clang-format,
#                               600 lines a file), build, and run the whole test suite: the ci preset (every
#                               test, warnings as errors), the asan preset (ASan + UBSan, CUDA off: every non-GPU
#                               test, GUI included) and the fuzz preset (clang, libFuzzer: each reader fuzzed with a fixed seed for
#                               a fixed number of inputs, at most CONVSCOPE_FUZZ_SECONDS)
# CUDA 13 and cuDNN 9 are used when the toolkit is installed (nvcc on PATH or in /usr/local/cuda); the GPU
# tests report themselves skipped on a machine without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${1:-open}"

# Installed with --no-install-recommends, so every package a CMake package file needs is named here: libdnnl-dev's
# dnnl-config.cmake calls find_package(OpenCL), which needs ocl-icd-opencl-dev (only a Recommends of libdnnl-dev);
# libonnx-dev's headers include protobuf's, which it does not depend on (libprotobuf-dev).
packages=(build-essential cmake ninja-build pkg-config qt6-base-dev qt6-svg-dev libqcustomplot-dev libgl-dev
          catch2 nlohmann-json3-dev libopenblas-dev libcli11-dev libstb-dev libdnnl-dev ocl-icd-opencl-dev
          libfftw3-dev libgraphviz-dev libonnx-dev libprotobuf-dev libonnx-testdata xauth xvfb clang-14 libclang-rt-14-dev
          clang-format-14)
missing=()
# The packaging tests: cpack -G DEB (dpkg-shlibdeps, file), the desktop and AppStream validators, the MIME check.
packages+=(desktop-file-utils appstream shared-mime-info libglib2.0-bin dpkg-dev file)
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
    echo "quickstart: installing ${missing[*]}"
    sudo_cmd=""
    [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
    $sudo_cmd apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# nvcc is often installed without being on PATH.
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
    export PATH="/usr/local/cuda/bin:$PATH"
fi

jobs="$(nproc)"
case "$mode" in
test)
    # Each stage prints its time: the whole of CI must stay well under 30 minutes on a 2-core machine.
    stage() {
        local t0=$SECONDS
        echo "quickstart: == $1"
        shift
        "$@"
        echo "quickstart: == done in $((SECONDS - t0)) s"
    }
    ci() { cmake --preset ci && cmake --build --preset ci -j "$jobs" && ctest --preset ci -j "$jobs"; }
    asan() { cmake --preset asan && cmake --build --preset asan -j "$jobs" && ctest --preset asan -j "$jobs"; }
    fuzz() {
        cmake --preset fuzz ${CONVSCOPE_FUZZ_SECONDS:+-DCONVSCOPE_FUZZ_SECONDS=$CONVSCOPE_FUZZ_SECONDS} &&
            cmake --build --preset fuzz -j "$jobs" && ctest --preset fuzz -j "$jobs"
    }
    # First, as it is the cheapest: a format difference or an overlong file fails CI before any build.
    stage "sources: clang-format and the 600-line limit (tools/check-format.sh)" tools/check-format.sh
    stage "ci preset: build (warnings as errors) and every test" ci
    [ "${CONVSCOPE_SKIP_ASAN:-0}" = 1 ] || stage "asan preset: ASan + UBSan, every non-GPU test" asan
    [ "${CONVSCOPE_SKIP_FUZZ:-0}" = 1 ] || stage "fuzz preset: libFuzzer on the .npy, network and image readers" fuzz
    ;;
open)
    cmake --preset dev
    cmake --build --preset dev -j "$jobs"
    example=resources/networks/lenet5.json
    if [ -x build/dev/bin/convscope ] && [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
        exec build/dev/bin/convscope --open "$example"
    fi
    echo "quickstart: no display or no GUI build; running the command line on $example"
    build/dev/bin/convscope-cli shapes "$example"
    build/dev/bin/convscope-cli run "$example" --backends cpu.direct,cpu.im2col_gemm
    ;;
*)
    echo "usage: tools/quickstart.sh [test]" >&2
    exit 2
    ;;
esac
