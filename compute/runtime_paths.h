// Where ConvScope finds its modules and its data at run time. Every folder is found from where the running
// program and the engine library are, never from a path fixed at build time, so one tree works as built,
// installed under /usr or any prefix, or extracted anywhere (dpkg-deb -x). The build tree mirrors the
// installed layout for data (build/share/convscope links to resources/), and its modules sit next to the
// engine library as installed ones do.
#pragma once

#include <filesystem>
#include <vector>

namespace convscope {

// The folder of the running program (/proc/self/exe); empty when it cannot be read.
std::filesystem::path executableDir();

// The folder of libconvscope_compute.so as loaded; the GPU modules are installed beside it.
std::filesystem::path engineLibraryDir();

// Where the GPU modules are looked for, in order, each once: $CONVSCOPE_MODULE_PATH (colon-separated), the
// engine library's folder, the program's folder, and the install layout's module folder relative to it.
std::vector<std::filesystem::path> moduleSearchDirs();

// share/convscope relative to the program ($CONVSCOPE_DATA_DIR overrides); empty when there is none.
std::filesystem::path dataDir();

// The bundled example networks (dataDir()/networks); empty when there are none.
std::filesystem::path examplesDir();

} // namespace convscope
