# The one place where ConvScope finds its dependencies. Required: nlohmann-json, CLI11, OpenBLAS, stb.
# Optional, "on when found": CUDA (our kernels), cuDNN (the vendor baseline), NCCL (data parallel), NVTX, the Qt 6
# GUI, tests.

find_package(Threads REQUIRED)
find_package(OpenMP REQUIRED COMPONENTS CXX)
set_package_properties(OpenMP PROPERTIES TYPE REQUIRED PURPOSE "threads for the fast CPU layers")

find_package(nlohmann_json 3.10 REQUIRED)
set_package_properties(nlohmann_json PROPERTIES TYPE REQUIRED PURPOSE "network files and JSON reports")
find_package(CLI11 REQUIRED)
set_package_properties(CLI11 PROPERTIES TYPE REQUIRED PURPOSE "convscope-cli's command line")

# Debian's OpenBLAS: cblas.h lives in an alternatives folder, so ask for it by name.
set(BLA_VENDOR OpenBLAS)
find_package(BLAS REQUIRED)
set_package_properties(BLAS PROPERTIES TYPE REQUIRED PURPOSE "sgemm for cpu.im2col_gemm and linear")
find_path(CBLAS_INCLUDE_DIR cblas.h PATH_SUFFIXES openblas openblas-pthread REQUIRED)

find_path(STB_INCLUDE_DIR stb_image.h PATH_SUFFIXES stb REQUIRED)

# --- CUDA ---------------------------------------------------------------------------------------------------------
include(CheckLanguage)
check_language(CUDA)
set(_cuda_default OFF)
if(CMAKE_CUDA_COMPILER)
  set(_cuda_default ON)
endif()
option(CONVSCOPE_WITH_CUDA "Build the CUDA backend module (on when nvcc is found)" ${_cuda_default})
# Debian 12's CMake 3.25.1 FindCUDAToolkit marks CUDA::nvToolsExt deprecated without checking that the target exists
# whenever the project's minimum CMake is 3.25 or newer; CUDA 13 ships no libnvToolsExt (NVTX 3 is header-only), so
# configure stopped with "set_property could not find TARGET CUDA::nvToolsExt" on a new machine with the toolkit.
# The project's minimum is lowered for this one call only (CMake 3.26 fixed the module). Called once, here:
# kernels/ uses the targets it made.
set(_convscope_minimum "${CMAKE_MINIMUM_REQUIRED_VERSION}")
if(CMAKE_VERSION VERSION_LESS 3.26)
  set(CMAKE_MINIMUM_REQUIRED_VERSION 3.24)
endif()
find_package(CUDAToolkit QUIET)
set(CMAKE_MINIMUM_REQUIRED_VERSION "${_convscope_minimum}")
set_package_properties(CUDAToolkit PROPERTIES TYPE OPTIONAL PURPOSE "our CUDA kernels, cuBLAS, NVTX 3 headers")
if(CONVSCOPE_WITH_CUDA)
  if(NOT CMAKE_CUDA_COMPILER)
    message(FATAL_ERROR "CONVSCOPE_WITH_CUDA is ON but no CUDA compiler was found")
  endif()
  # sm_90 (H100/H200) runs the real thing; sm_80 for A100; PTX of the newest listed arch lets newer GPUs
  # JIT it. Override with -DCMAKE_CUDA_ARCHITECTURES=... for a faster build on one GPU.
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES "80-real;90")
  endif()
  enable_language(CUDA)
  set(CMAKE_CUDA_STANDARD 20)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
endif()

# NVTX 3 is header-only and ships with the toolkit.
set(CONVSCOPE_HAVE_NVTX OFF)
if(TARGET CUDA::nvtx3)
  set(CONVSCOPE_HAVE_NVTX ON)
endif()
add_feature_info(NVTX CONVSCOPE_HAVE_NVTX "NVTX ranges for Nsight Systems (no-ops without the headers)")

# --- cuDNN: found through a root path that can be set (on the GPU machine it lives in a Python wheel) ---------
set(CUDNN_ROOT "$ENV{CUDNN_ROOT}" CACHE PATH "Folder with include/cudnn.h and lib/libcudnn.so*")
# A root that is set wins outright: headers and library from the same cuDNN. (Searching every folder for the
# unversioned libcudnn.so first once paired a wheel's 9.19 headers with the system's 9.14 library on the GPU
# machine, whose wheel ships only libcudnn.so.9.)
if(CUDNN_ROOT)
  find_path(CUDNN_INCLUDE_DIR cudnn.h PATHS "${CUDNN_ROOT}" PATH_SUFFIXES include NO_DEFAULT_PATH)
  find_library(CUDNN_LIBRARY NAMES cudnn libcudnn.so.9 NAMES_PER_DIR PATHS "${CUDNN_ROOT}" PATH_SUFFIXES lib lib64
    NO_DEFAULT_PATH)
endif()
find_path(CUDNN_INCLUDE_DIR cudnn.h HINTS "${CUDNN_ROOT}" PATH_SUFFIXES include
  PATHS ${CUDAToolkit_INCLUDE_DIRS} /usr/include /usr/local/cuda/include)
find_library(CUDNN_LIBRARY NAMES cudnn libcudnn.so.9 HINTS "${CUDNN_ROOT}" PATH_SUFFIXES lib lib64
  PATHS ${CUDAToolkit_LIBRARY_DIR} /usr/lib/x86_64-linux-gnu /usr/local/cuda/lib64)
set(_cudnn_default OFF)
if(CONVSCOPE_WITH_CUDA AND CUDNN_INCLUDE_DIR AND CUDNN_LIBRARY)
  set(_cudnn_default ON)
endif()
option(CONVSCOPE_WITH_CUDNN "Build the cuDNN backend module (on when cuDNN is found)" ${_cudnn_default})
add_feature_info(CUDA CONVSCOPE_WITH_CUDA "the cuda backend module (our kernels)")
add_feature_info(cuDNN CONVSCOPE_WITH_CUDNN "the cudnn backend module (cuDNN ${CUDNN_INCLUDE_DIR})")

# --- NCCL: data-parallel training across GPUs (optional; the CUDA toolkit has it here, on the GPU machine it is in
# the PyTorch wheel, nvidia/nccl, with only libnccl.so.2), found like cuDNN through a root path that can be set ---
set(NCCL_ROOT "$ENV{NCCL_ROOT}" CACHE PATH "Folder with include/nccl.h and lib/libnccl.so*")
if(NCCL_ROOT)
  # A root that is set wins outright, headers and library from the same NCCL (as for cuDNN above).
  find_path(NCCL_INCLUDE_DIR nccl.h PATHS "${NCCL_ROOT}" PATH_SUFFIXES include NO_DEFAULT_PATH)
  find_library(NCCL_LIBRARY NAMES nccl libnccl.so.2 NAMES_PER_DIR PATHS "${NCCL_ROOT}" PATH_SUFFIXES lib lib64
    NO_DEFAULT_PATH)
endif()
find_path(NCCL_INCLUDE_DIR nccl.h PATHS ${CUDAToolkit_INCLUDE_DIRS} /usr/include /usr/local/cuda/include)
find_library(NCCL_LIBRARY NAMES nccl libnccl.so.2 NAMES_PER_DIR
  PATHS ${CUDAToolkit_LIBRARY_DIR} /usr/lib/x86_64-linux-gnu /usr/local/cuda/lib64)
set(_nccl_default OFF)
if(CONVSCOPE_WITH_CUDA AND NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
  set(_nccl_default ON)
endif()
option(CONVSCOPE_WITH_NCCL
  "Data-parallel training across GPUs with NCCL in the GPU modules (cuda and cudnn; on when NCCL is found)"
  ${_nccl_default})
if(CONVSCOPE_WITH_NCCL AND NOT (CONVSCOPE_WITH_CUDA AND NCCL_INCLUDE_DIR AND NCCL_LIBRARY))
  message(FATAL_ERROR "CONVSCOPE_WITH_NCCL is ON but NCCL (set NCCL_ROOT) or CUDA is missing")
endif()
add_feature_info(NCCL CONVSCOPE_WITH_NCCL "data-parallel training across GPUs (train --distributed; ${NCCL_LIBRARY})")
# Why `train --distributed` is unavailable, for its message (through the config header).
set(CONVSCOPE_NCCL_WHY "")
if(NOT CONVSCOPE_WITH_CUDA)
  set(CONVSCOPE_NCCL_WHY "the GPU modules were not built (convscope-cli info says why)")
elseif(NOT (NCCL_INCLUDE_DIR AND NCCL_LIBRARY))
  set(CONVSCOPE_NCCL_WHY "NCCL was not found when ConvScope was configured (set NCCL_ROOT to the folder with include/nccl.h and lib/libnccl.so*)")
elseif(NOT CONVSCOPE_WITH_NCCL)
  set(CONVSCOPE_NCCL_WHY "configured with CONVSCOPE_WITH_NCCL=OFF")
endif()

# --- oneDNN: the CPU library baseline (Debian's libdnnl-dev, API v2.x as in bookworm) --------------------------
# Probed in a separate CMake process first: a package file that fails to load (dnnl-config.cmake needs OpenCL's
# development files) leaves the backend out with the reason instead of stopping configure.
include(ConvScopeProbePackage)
convscope_probe_package(dnnl _dnnl_usable _dnnl_probe_why)
if(_dnnl_probe_why STREQUAL "not installed")
  set(CONVSCOPE_ONEDNN_WHY "libdnnl-dev is not installed")
elseif(_dnnl_probe_why MATCHES "OpenCL")
  set(CONVSCOPE_ONEDNN_WHY "libdnnl-dev's CMake package file did not load: ${_dnnl_probe_why}; apt install ocl-icd-opencl-dev")
else()
  set(CONVSCOPE_ONEDNN_WHY "libdnnl-dev's CMake package file did not load: ${_dnnl_probe_why}")
endif()
if(_dnnl_usable)
  find_package(dnnl CONFIG QUIET)
  if(NOT dnnl_FOUND)
    set(CONVSCOPE_ONEDNN_WHY "libdnnl-dev's CMake package file loaded in the probe but not in the build")
  endif()
else()
  message(STATUS "oneDNN backend left out: ${CONVSCOPE_ONEDNN_WHY}")
endif()
set_package_properties(dnnl PROPERTIES TYPE OPTIONAL PURPOSE "the onednn backend module (CPU library baseline)")
option(CONVSCOPE_WITH_ONEDNN "Build the oneDNN backend module (on when libdnnl-dev is found)" ${dnnl_FOUND})
if(CONVSCOPE_WITH_ONEDNN AND NOT dnnl_FOUND)
  message(FATAL_ERROR "CONVSCOPE_WITH_ONEDNN is ON but oneDNN cannot be used: ${CONVSCOPE_ONEDNN_WHY}")
endif()
add_feature_info(oneDNN CONVSCOPE_WITH_ONEDNN "the onednn backend module")

# --- ONNX import/export: Debian's libonnx-dev (generated protobuf classes, checker) + libprotobuf-dev -----------
# Optional and probed like oneDNN: a package file that fails to load leaves ONNX support out with the reason.
convscope_probe_package(ONNX _onnx_usable _onnx_probe_why)
if(_onnx_probe_why STREQUAL "not installed")
  set(CONVSCOPE_ONNX_WHY "libonnx-dev is not installed")
else()
  set(CONVSCOPE_ONNX_WHY "libonnx-dev's CMake package file did not load: ${_onnx_probe_why}")
endif()
if(_onnx_usable)
  # onnx_proto links protobuf::libprotobuf, which FindProtobuf defines. Debian's ONNX 1.12 exports its targets
  # without a namespace: onnx (checker, shape inference) and onnx_proto (the generated classes).
  find_package(Protobuf QUIET)
  find_package(ONNX CONFIG QUIET)
  if(NOT ONNX_FOUND OR NOT TARGET onnx_proto OR NOT TARGET onnx)
    set(CONVSCOPE_ONNX_WHY "libonnx-dev's CMake package file loaded in the probe but not in the build")
  elseif(NOT TARGET protobuf::libprotobuf)
    set(ONNX_FOUND FALSE)
    set(CONVSCOPE_ONNX_WHY "libprotobuf-dev is not installed (libonnx-dev needs it)")
  endif()
endif()
if(NOT ONNX_FOUND)
  set(ONNX_FOUND FALSE)
  message(STATUS "ONNX import/export left out: ${CONVSCOPE_ONNX_WHY}")
endif()
option(CONVSCOPE_WITH_ONNX "Build ONNX import and export (on when libonnx-dev is found)" ${ONNX_FOUND})
if(CONVSCOPE_WITH_ONNX AND NOT ONNX_FOUND)
  message(FATAL_ERROR "CONVSCOPE_WITH_ONNX is ON but ONNX cannot be used: ${CONVSCOPE_ONNX_WHY}")
endif()
if(ONNX_FOUND AND NOT CONVSCOPE_WITH_ONNX)
  set(CONVSCOPE_ONNX_WHY "configured with CONVSCOPE_WITH_ONNX=OFF")
endif()
add_feature_info(ONNX CONVSCOPE_WITH_ONNX "ONNX model import and export")

# --- FFTW3 (single precision, threaded): cpu.fft ------------------------------------------------------------------
find_path(FFTW3_INCLUDE_DIR fftw3.h REQUIRED)
find_library(FFTW3F_LIBRARY fftw3f REQUIRED)
find_library(FFTW3F_THREADS_LIBRARY fftw3f_threads REQUIRED)
add_library(convscope_fftw3f INTERFACE)
target_include_directories(convscope_fftw3f SYSTEM INTERFACE "${FFTW3_INCLUDE_DIR}")
target_link_libraries(convscope_fftw3f INTERFACE "${FFTW3F_THREADS_LIBRARY}" "${FFTW3F_LIBRARY}" Threads::Threads)

# Why a module is not built, for `convscope-cli info` (compute/backend_registry.cpp through the config header).
set(CONVSCOPE_CUDA_WHY "no CUDA compiler (nvcc) was found when ConvScope was configured")
if(CMAKE_CUDA_COMPILER AND NOT CONVSCOPE_WITH_CUDA)
  set(CONVSCOPE_CUDA_WHY "configured with CONVSCOPE_WITH_CUDA=OFF")
endif()
set(CONVSCOPE_CUDNN_WHY "cuDNN was not found when ConvScope was configured (set CUDNN_ROOT)")
if(NOT CONVSCOPE_WITH_CUDA)
  set(CONVSCOPE_CUDNN_WHY "${CONVSCOPE_CUDA_WHY}")
elseif(CUDNN_INCLUDE_DIR AND CUDNN_LIBRARY AND NOT CONVSCOPE_WITH_CUDNN)
  set(CONVSCOPE_CUDNN_WHY "configured with CONVSCOPE_WITH_CUDNN=OFF")
endif()
if(dnnl_FOUND AND NOT CONVSCOPE_WITH_ONEDNN)
  set(CONVSCOPE_ONEDNN_WHY "configured with CONVSCOPE_WITH_ONEDNN=OFF")
endif()

# --- GUI ------------------------------------------------------------------------------------------------------
find_package(Qt6 QUIET COMPONENTS Widgets PrintSupport Svg Test)
set(_gui_default OFF)
if(Qt6_FOUND)
  find_package(QCustomPlotQt6 QUIET)
  if(QCustomPlotQt6_FOUND)
    set(_gui_default ON)
  endif()
endif()
set_package_properties(Qt6 PROPERTIES TYPE RECOMMENDED PURPOSE "the convscope window")
set_package_properties(QCustomPlotQt6 PROPERTIES TYPE RECOMMENDED PURPOSE "timing charts in the window")
option(CONVSCOPE_WITH_GUI "Build the Qt 6 window (on when Qt 6 and QCustomPlot are found)" ${_gui_default})
add_feature_info(GUI CONVSCOPE_WITH_GUI "the convscope window")

# --- Graphviz: the graph view's layout (dot, through libgvc and libcgraph; Debian's libgraphviz-dev) -----------
# Optional: without it the graph page says why instead of showing the network.
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(GRAPHVIZ QUIET IMPORTED_TARGET libgvc libcgraph)
endif()
set(Graphviz_FOUND ${GRAPHVIZ_FOUND})
set_package_properties(Graphviz PROPERTIES TYPE RECOMMENDED DESCRIPTION "graph layout (libgraphviz-dev)"
  PURPOSE "the graph view of a network in the window (dot layout)")
option(CONVSCOPE_WITH_GRAPHVIZ "Lay out the window's graph view with Graphviz (on when libgraphviz-dev is found)"
  ${GRAPHVIZ_FOUND})
if(CONVSCOPE_WITH_GRAPHVIZ AND NOT GRAPHVIZ_FOUND)
  message(FATAL_ERROR "CONVSCOPE_WITH_GRAPHVIZ is ON but libgvc/libcgraph were not found (apt install libgraphviz-dev)")
endif()
set(CONVSCOPE_GRAPHVIZ_WHY "")
if(NOT GRAPHVIZ_FOUND)
  set(CONVSCOPE_GRAPHVIZ_WHY "ConvScope was built without Graphviz (libgraphviz-dev was not found when it was configured)")
elseif(NOT CONVSCOPE_WITH_GRAPHVIZ)
  set(CONVSCOPE_GRAPHVIZ_WHY "ConvScope was configured with CONVSCOPE_WITH_GRAPHVIZ=OFF")
endif()
add_feature_info(Graphviz CONVSCOPE_WITH_GRAPHVIZ "the graph view's dot layout (libgvc ${GRAPHVIZ_libgvc_VERSION})")

# --- Tests ----------------------------------------------------------------------------------------------------
find_package(Catch2 2 QUIET)
set_package_properties(Catch2 PROPERTIES TYPE RECOMMENDED PURPOSE "the test suite")
set(_tests_default OFF)
if(Catch2_FOUND)
  set(_tests_default ON)
endif()
option(CONVSCOPE_BUILD_TESTS "Build the Catch2 test suite" ${_tests_default})
add_feature_info(Tests CONVSCOPE_BUILD_TESTS "Catch2 tests registered with CTest")

# --- Sanitizers (the asan preset) ------------------------------------------------------------------------------
option(CONVSCOPE_SANITIZE "Build with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)
# UBSan without its four pointer checks (null, alignment, object-size, pointer-overflow): they instrument every
# dereference and took 58 % of an engine file's compile under both sanitizers (68 s → 29 s for one unity file), while
# AddressSanitizer already reports a null or out-of-bounds access with its stack. The arithmetic checks (signed
# overflow, shifts, division, float casts, bounds, enums, vptr) stay: sizes that overflow are what UBSan is here for.
set(CONVSCOPE_UBSAN_SKIPPED_CHECKS -fno-sanitize=null,alignment,object-size,pointer-overflow)
if(CONVSCOPE_SANITIZE)
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=address,undefined>
                      $<$<COMPILE_LANGUAGE:CXX>:${CONVSCOPE_UBSAN_SKIPPED_CHECKS}>
                      $<$<COMPILE_LANGUAGE:CXX>:-fno-omit-frame-pointer>)
  add_link_options(-fsanitize=address,undefined)
endif()
add_feature_info(Sanitizers CONVSCOPE_SANITIZE "ASan + UBSan")
