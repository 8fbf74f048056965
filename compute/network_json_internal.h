// Internal to compute/network_json*.cpp: what the network file's reader and writer share, and the strict field
// readers (one JSON value each) that the parser in network_json.cpp is built from; network_json_fields.cpp holds them.
#pragma once

#include "compute/error.h"
#include "compute/network.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace convscope::network_json {

using Json = nlohmann::ordered_json;

inline constexpr const char* kFormat = "convscope-network";
inline constexpr int kVersion = 1;

inline const std::vector<std::string> kSeededKinds = { "default", "uniform", "he_uniform", "xavier_uniform", "random" };

bool contains(const std::vector<std::string>& v, const std::string& s);
std::string joined(const std::vector<std::string>& items);
// The value as the file spelled it, short enough for one line of an error message.
std::string shown(const Json& v);

// Where we are in the file, for messages: "lenet.json: layer 3 (c2)".
struct Context {
    std::string where;
    [[noreturn]] void fail(const std::string& message) const { throw InputError(where + ": " + message); }
};

// Refuses a key `allowed` does not list, suggesting the nearest allowed key when one is close.
void checkKeys(const Json& obj, const std::vector<std::string>& allowed, const Context& ctx, const std::string& owner);

bool isInteger(const Json& v);
// The binary kind's fields (network_json_binary.cpp): op, constant (numbers, or an .npy path read after the layers by
// readBinaryConstant), constant_shape, constant_first.
void readBinary(const Json& j, Binary& l, const Context& ctx);
void readBinaryConstant(Binary& l, const std::filesystem::path& baseDir, const Context& ctx);
// The gather kind's fields (network_json_tensor.cpp): axis, indices (a list, or one number: a scalar index),
// indices_shape ([] for a scalar; left out: a list of all the indices).
void readGather(const Json& j, Gather& l, const Context& ctx);
void writeGather(Json& o, const Gather& l);
// matmul's constant operand (network_json_tensor.cpp): constant (a list of numbers), constant_shape, constant_first.
void readMatmul(const Json& j, Matmul& l, const Context& ctx);
void writeMatmul(Json& o, const Matmul& l);
int64_t readInt(const Json& v, const std::string& key, int64_t minimum, const Context& ctx);
// A list of minCount to maxCount integers, each at least `minimum`.
std::vector<int64_t> readIntList(
    const Json& v, const std::string& key, int64_t minimum, size_t minCount, size_t maxCount, const Context& ctx);
double readNumber(const Json& v, const std::string& key, const Context& ctx);
bool readBool(const Json& v, const std::string& key, const Context& ctx);
std::string readString(const Json& v, const std::string& key, const Context& ctx);

// One name for the 2-D and 3-D readers, so the window ops of both ranks read their fields in one branch.
void readInto(Pair& out, const Json& v, const std::string& key, int64_t minimum, const Context& ctx);
void readInto(Triple& out, const Json& v, const std::string& key, int64_t minimum, const Context& ctx);
void readInto(Padding2d& out, const Json& v, const std::string& key, const Context& ctx);
void readInto(Padding3d& out, const Json& v, const std::string& key, const Context& ctx);

// resize's fields (size, scale_factor, mode, coordinate_transformation_mode, nearest_mode, cubic_coeff_a,
// exclude_outside); a file that gives size and no scale_factor resizes to the size.
void readResize(const Json& j, Resize& l, const Context& ctx);

// The normalization kinds' fields (layer_norm, group_norm, instance_norm; network_json_norm.cpp): read into `spec`
// and the layer's init, and written with `init` (the layer's init as initJson writes it).
void readNormalization(const Json& j, LayerSpec& spec, Layer& layer, const Context& ctx);
void writeNormalization(const LayerSpec& spec, const Layer& layer, Json& o, const Json& init);

// A batch-norm tensor: a scalar, a list (one per channel) or an .npy path.
ParamValue readParamValue(const Json& v, const std::string& key, bool nonNegative, const Context& ctx);
// "init": the kinds that apply to `type`, and only the keys that mean something for the chosen kind.
InitSpec readInit(const Json& v, const std::string& type, bool hasBias, const Context& ctx);

} // namespace convscope::network_json
