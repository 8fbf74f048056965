// The NumPy .npy format, versions 1.0, 2.0 and 3.0, little-endian float32 and float64 in C order.
// The header is parsed as data with a small dictionary parser; it is never evaluated. Anything else
// (Fortran order, other dtypes, big-endian, truncated data, a header length that lies, a file that is
// not .npy) is an InputError naming the file and the problem.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace convscope {

struct NpyArray {
    std::vector<int64_t> dims; // as in the file; {} for a scalar
    std::vector<float> data; // float64 files are converted
    int64_t numel() const;
};

NpyArray readNpy(const std::filesystem::path& path);
NpyArray parseNpy(const std::string& bytes, const std::string& what); // `what` names the source in errors
// Writes float32, version 1.0 (2.0 if the header needs it), atomically (temporary file, then rename).
void writeNpy(const std::filesystem::path& path, const std::vector<int64_t>& dims, const float* data);
// "[2, 3, 5]": an array's dims as error messages show them.
std::string npyDimsText(const std::vector<int64_t>& dims);
std::string serializeNpy(const std::vector<int64_t>& dims, const float* data);

} // namespace convscope
