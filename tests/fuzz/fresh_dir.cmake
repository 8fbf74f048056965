# cmake -DDIR=<folder> -P fresh_dir.cmake: an empty <folder>, whatever was in it (a fuzzer's working corpus).
if(NOT DIR)
  message(FATAL_ERROR "fresh_dir.cmake: DIR is not set")
endif()
file(REMOVE_RECURSE "${DIR}")
file(MAKE_DIRECTORY "${DIR}")
