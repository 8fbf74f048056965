# The one place that sets ConvScope's compiler warnings, for every target added after it (add_compile_options).
#   C++        -Wall -Wextra
#   CUDA       the host compiler's -Wall -Wextra (through -Xcompiler) and nvcc's own checks:
#              --Wreorder (member initialiser order in device code), --Wext-lambda-captures-this
#   always an error: -Wswitch (a switch over an enum without a default that misses an enumerator), in every build,
#              so a dispatch over ActivationKind or another kind enum cannot forget a new kind
#   as errors  where a target's COMPILE_WARNING_AS_ERROR is on (the ci preset sets CMAKE_COMPILE_WARNING_AS_ERROR):
#              CMake adds -Werror for C++ and "-Werror all-warnings" for nvcc (which makes the host compiler's
#              warnings in a .cu file errors too). `cmake --compile-no-warning-as-error` turns it off for one build.
# GCC 12's -Wrestrict reports a false overlap inside libstdc++'s std::string at -O3 (GCC bug 105651, fixed in 13):
# off for GCC 12 only, where every file that appends to a string tripped it in the ci preset.
# Third-party headers (Qt, QCustomPlot, cuDNN, CUDA, stb, OpenBLAS, FFTW, ONNX) come in as SYSTEM include folders
# (imported targets are; the find_path folders are added with SYSTEM), so their warnings never reach us.
# Device code is not seen by the host compiler; the GPU dispatches over kinds are checked by static_assert and
# by __host__ __device__ switches without a default instead (docs/ARCHITECTURE.md, "Exhaustive dispatch").
add_compile_options(
  "$<$<COMPILE_LANGUAGE:C,CXX>:-Wall;-Wextra;-Werror=switch>"
  "$<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra,-Werror=switch;--Wreorder;--Wext-lambda-captures-this>")
# The tests (tests/CMakeLists.txt adds these): -Wextra's -Wmissing-field-initializers is off there, where a layer spec
# or a Layer is written as a partial aggregate, `Conv2d pointwise { 72, { 1, 1 } }`, the rest taken from the default
# member initialisers (50 such places when the tests first got -Wextra). The engine, modules and programs keep it.
set(CONVSCOPE_TEST_COMPILE_OPTIONS "$<$<COMPILE_LANGUAGE:CXX>:-Wno-missing-field-initializers>")
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  # GCC 12 with a precompiled header (the tests precompile Catch2's) reports libstdc++'s own inlined memcpy in
  # std::string's operator+ as -Wstringop-overflow and -Warray-bounds (14 test files), false positives that the
  # header's system status hides without one. The tests' out-of-bounds accesses are ASan's to find (asan preset).
  list(APPEND CONVSCOPE_TEST_COMPILE_OPTIONS "$<$<COMPILE_LANGUAGE:CXX>:-Wno-stringop-overflow>"
    "$<$<COMPILE_LANGUAGE:CXX>:-Wno-array-bounds>")
  add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:-Wno-restrict>" "$<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wno-restrict>")
endif()
