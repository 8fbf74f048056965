# A package file that cannot load: it requires a library that is not there, as dnnl-config.cmake requires OpenCL
# (find_package(OpenCL REQUIRED) ends in find_package_handle_standard_args' FATAL_ERROR).
include(FindPackageHandleStandardArgs)
find_library(ConvScopeNoSuchLibrary_LIBRARY convscope_no_such_library)
set(ConvScopeNoSuchLibrary_FIND_REQUIRED TRUE)
find_package_handle_standard_args(ConvScopeNoSuchLibrary REQUIRED_VARS ConvScopeNoSuchLibrary_LIBRARY)
