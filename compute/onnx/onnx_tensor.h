// Constant tensors of an ONNX graph: initializers, Constant nodes and what folding computes from them. Floats
// (float, double, float16 is refused) are held as float, integers (int64, int32, int8, uint8, bool) as int64.
#pragma once

#include "compute/npy.h" // npyDimsText, for the shapes in messages

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace onnx {
class TensorProto;
}

namespace convscope::onnx {

struct ConstTensor {
    std::vector<int64_t> dims;
    bool isFloat = true;
    std::vector<float> f; // isFloat
    std::vector<int64_t> i; // !isFloat

    int64_t numel() const; // product of dims (checked when the tensor was made)
    double at(size_t k) const { return isFloat ? double(f[k]) : double(i[k]); }
    std::vector<int64_t> ints(const std::string& what) const; // every element as an integer (exact for integers)
};

// The element count of dims; InputError for a negative dim or an overflow (what names the tensor).
int64_t elementCount(const std::vector<int64_t>& dims, const std::string& what);

// Reads a TensorProto: raw_data or the typed fields, or an external-data file inside `modelDir` (never a path
// that leaves it). Checks the element count against the data and the memory budget before allocating.
ConstTensor readTensor(
    const ::onnx::TensorProto& proto, const std::filesystem::path& modelDir, const std::string& what);

} // namespace convscope::onnx
