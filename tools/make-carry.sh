#!/usr/bin/env bash
# Copies the build dependencies that the GPU machine lacks (it has CUDA, cuDNN in a Python wheel, CMake, ninja
# and a compiler, but no Debian -dev packages and no network) from this machine into the git-ignored .carry/,
# laid out like /usr so CMake finds them with -DCMAKE_PREFIX_PATH=.carry/usr:
#   header-only: nlohmann-json, CLI11, stb, Catch2 2 (with its CMake files: Catch.cmake, CatchAddTests.cmake)
#   OpenBLAS:   libopenblas.so(.0) + cblas.h/openblas_config.h + its runtime deps (libgfortran, libquadmath)
#   FFTW3:      libfftw3f(_threads).so + fftw3.h
#   ONNX:       libonnx, libonnx_proto, libprotobuf + headers + ONNX's CMake files
#   oneDNN:     libdnnl.so.2.6 + headers + its CMake files, and the OpenCL loader + headers they ask for
# tools/gpu-check.sh uses it. Run from anywhere; prints the size (the device call carries at most 64 MiB).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# Staged here, then packed as .carry/usr.tar.xz (OpenBLAS alone is 36 MB, 4 MB packed: the carry limit is 64 MiB);
# tools/gpu-check.sh unpacks it on the GPU machine.
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
C="$STAGE/usr"
rm -rf "$ROOT/.carry"
mkdir -p "$ROOT/.carry" "$C/include" "$C/lib/cmake" "$C/share/cmake" "$C/lib/x86_64-linux-gnu"

for d in nlohmann CLI stb catch2; do
  cp -a "/usr/include/$d" "$C/include/"
done
cp -a /usr/share/cmake/nlohmann_json /usr/share/cmake/CLI11 "$C/share/cmake/"
cp -a /usr/lib/cmake/Catch2 "$C/lib/cmake/"
# Catch2's exported targets check that every imported file exists, the main library included.
for f in /usr/lib/libCatch2WithMain.a /usr/lib/x86_64-linux-gnu/libCatch2WithMain.a; do
  [ -e "$f" ] && mkdir -p "$C/lib" && cp -a "$f" "$C/lib/" || true
done

# OpenBLAS (pthread flavour) and the Fortran runtime it needs.
BLAS=$(readlink -f /usr/lib/x86_64-linux-gnu/libopenblas.so.0)
cp "$BLAS" "$C/lib/x86_64-linux-gnu/libopenblas.so.0"
ln -sf libopenblas.so.0 "$C/lib/x86_64-linux-gnu/libopenblas.so"
for dep in $(ldd "$BLAS" | awk '/libgfortran|libquadmath/ {print $3}'); do
  cp "$(readlink -f "$dep")" "$C/lib/x86_64-linux-gnu/$(basename "$dep")"
done
mkdir -p "$C/include/openblas"
INC=$(dirname "$(readlink -f /usr/include/x86_64-linux-gnu/cblas.h 2>/dev/null || echo /usr/include/x86_64-linux-gnu/openblas-pthread/cblas.h)")
cp "$INC"/cblas.h "$INC"/openblas_config.h "$C/include/openblas/"
[ -e "$INC/f77blas.h" ] && cp "$INC/f77blas.h" "$C/include/openblas/"

# FFTW3, single precision and its threads library (cpu.fft).
cp /usr/include/fftw3.h "$C/include/"
for l in libfftw3f libfftw3f_threads; do
  cp "$(readlink -f /usr/lib/x86_64-linux-gnu/$l.so.3)" "$C/lib/x86_64-linux-gnu/$l.so.3"
  ln -sf "$l.so.3" "$C/lib/x86_64-linux-gnu/$l.so"
done

# ONNX (libonnx-dev 1.12: generated classes + checker) and protobuf 3.21, for ONNX import/export and the
# libonnx-testdata conformance suite on the GPU: headers, libraries, and ONNX's CMake files with every file they
# check for. The test data itself is carried apart (tools/gpu-check.sh's onnx stage).
cp -a /usr/include/onnx "$C/include/"
mkdir -p "$C/include/google" "$C/lib/x86_64-linux-gnu/cmake"
cp -a /usr/include/google/protobuf "$C/include/google/"
cp -a /usr/lib/x86_64-linux-gnu/cmake/ONNX "$C/lib/x86_64-linux-gnu/cmake/"
for f in libonnx.so.1 libonnx_proto.so.1 libonnxifi_dummy.so libonnxifi_loader.a; do
  cp "$(readlink -f /usr/lib/x86_64-linux-gnu/$f)" "$C/lib/x86_64-linux-gnu/$f"
done
ln -sf libonnx.so.1 "$C/lib/x86_64-linux-gnu/libonnx.so"
ln -sf libonnx_proto.so.1 "$C/lib/x86_64-linux-gnu/libonnx_proto.so"
cp "$(readlink -f /usr/lib/libonnxifi.so)" "$C/lib/libonnxifi.so"
cp "$(readlink -f /usr/lib/x86_64-linux-gnu/libprotobuf.so.32)" "$C/lib/x86_64-linux-gnu/libprotobuf.so.32"
ln -sf libprotobuf.so.32 "$C/lib/x86_64-linux-gnu/libprotobuf.so"

# oneDNN 2.6 (libdnnl-dev: the onednn backend, the CPU benchmarks' library baseline). Its CMake file finds OpenCL
# (Debian builds it with the OpenCL GPU runtime), so the ICD loader and CL headers come too.
if [ -e /usr/lib/x86_64-linux-gnu/libdnnl.so.2 ]; then
  cp -a /usr/include/dnnl*.h /usr/include/dnnl*.hpp /usr/include/oneapi /usr/include/CL "$C/include/"
  cp -a /usr/lib/x86_64-linux-gnu/cmake/dnnl "$C/lib/x86_64-linux-gnu/cmake/"
  cp "$(readlink -f /usr/lib/x86_64-linux-gnu/libdnnl.so.2)" "$C/lib/x86_64-linux-gnu/libdnnl.so.2.6"
  ln -sf libdnnl.so.2.6 "$C/lib/x86_64-linux-gnu/libdnnl.so.2"
  ln -sf libdnnl.so.2 "$C/lib/x86_64-linux-gnu/libdnnl.so"
  cp "$(readlink -f /usr/lib/x86_64-linux-gnu/libOpenCL.so.1)" "$C/lib/x86_64-linux-gnu/libOpenCL.so.1"
  ln -sf libOpenCL.so.1 "$C/lib/x86_64-linux-gnu/libOpenCL.so"
fi

tar -cJf "$ROOT/.carry/usr.tar.xz" -C "$STAGE" usr

# ONNX's backend tests (libonnx-testdata) for the GPU conformance run: every test folder (38 MiB unpacked, a few
# compressed; a filter by operator name left out the kinds added later, whose tests then failed for want of data).
if [ -d /usr/share/libonnx-testdata/data/node ]; then
  (cd /usr/share/libonnx-testdata && find data/node data/pytorch-converted data/pytorch-operator -mindepth 1 -maxdepth 1 \
    -type d | tar -cJf "$ROOT/.carry/onnx-testdata.tar.xz" -T -)
fi

# Hints for the configure step (read by tools/gpu-check.sh).
cat >"$ROOT/.carry/cmake-hints.txt" <<HINTS
-DCMAKE_PREFIX_PATH=\$CARRY/usr
-DBLAS_LIBRARIES=\$CARRY/usr/lib/x86_64-linux-gnu/libopenblas.so
-DCBLAS_INCLUDE_DIR=\$CARRY/usr/include/openblas
-DSTB_INCLUDE_DIR=\$CARRY/usr/include/stb
HINTS
du -sh "$ROOT/.carry"
