# convscope_probe_package(<Package> <found-var> <reason-var> [COMPONENTS ...])
#
# Loads an optional package's CMake config file in a separate CMake process first. A config file that fails
# (libdnnl-dev's dnnl-config.cmake calls find_package(OpenCL REQUIRED), and that is a FATAL_ERROR when
# ocl-icd-opencl-dev is missing) would otherwise stop ConvScope's own configure, since a FATAL_ERROR raised inside
# find_package cannot be caught. Only when the probe loads the file cleanly is it loaded here as well.
#   <found-var>   TRUE when the package can be used
#   <reason-var>  why not, in one line a person can act on (empty when found)
function(convscope_probe_package package found_var reason_var)
  set(_dir "${CMAKE_BINARY_DIR}/package-probes/${package}")
  file(MAKE_DIRECTORY "${_dir}")
  # LANGUAGES C: OpenCL's and others' find modules run check_* macros that need a C compiler.
  file(WRITE "${_dir}/CMakeLists.txt"
    "cmake_minimum_required(VERSION 3.25)\nproject(probe_${package} LANGUAGES C)\n"
    "find_package(${package} CONFIG REQUIRED ${ARGN})\n")
  set(_args -S "${_dir}" -B "${_dir}/build" -G "${CMAKE_GENERATOR}")
  if(CMAKE_C_COMPILER)
    list(APPEND _args "-DCMAKE_C_COMPILER=${CMAKE_C_COMPILER}")
  endif()
  if(CMAKE_PREFIX_PATH)
    string(REPLACE ";" "\\;" _prefix "${CMAKE_PREFIX_PATH}")
    list(APPEND _args "-DCMAKE_PREFIX_PATH=${_prefix}")
  endif()
  if(${package}_DIR)
    list(APPEND _args "-D${package}_DIR=${${package}_DIR}")
  endif()
  execute_process(COMMAND "${CMAKE_COMMAND}" ${_args} RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
  if(_rc EQUAL 0)
    set(${found_var} TRUE PARENT_SCOPE)
    set(${reason_var} "" PARENT_SCOPE)
    return()
  endif()
  # The first line that says what is missing: "Could NOT find OpenCL (missing: ...)" or "Could not find a package
  # configuration file provided by ...".
  set(_why "its CMake package file failed to load")
  # CMake wraps its error text over indented lines: join them first.
  string(REGEX REPLACE "\n +" " " _flat "${_err}")
  string(REGEX MATCH "Could (NOT|not) find [^\n]*" _line "${_flat}")
  if(_line)
    string(STRIP "${_line}" _line)
    # The reason ends up in a C string literal (the config header).
    string(REPLACE "\"" "'" _line "${_line}")
    string(REPLACE "\\" "/" _line "${_line}")
    set(_why "${_line}")
  endif()
  if(_err MATCHES "Could not find a package configuration file")
    set(_why "not installed")
  endif()
  set(${found_var} FALSE PARENT_SCOPE)
  set(${reason_var} "${_why}" PARENT_SCOPE)
endfunction()
