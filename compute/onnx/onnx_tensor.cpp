// TensorProto → ConstTensor. Every size read from the file is checked before it is used: the counts against
// the bytes present, the total against the memory budget, external paths against the model's folder.
#include "compute/onnx/onnx_tensor.h"

#include "compute/checked_math.h"
#include "compute/error.h"
#include "compute/memory_budget.h"

#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>
#include <fstream>

namespace convscope::onnx {

namespace {

    using Proto = ::onnx::TensorProto;

    // Element size in bytes for the types ConvScope reads; 0 for the others.
    size_t elementSize(int type)
    {
        switch (type) {
        case Proto::FLOAT:
        case Proto::INT32:
            return 4;
        case Proto::DOUBLE:
        case Proto::INT64:
            return 8;
        case Proto::INT8:
        case Proto::UINT8:
        case Proto::BOOL:
            return 1;
        default:
            return 0;
        }
    }

    std::string typeName(int type)
    {
        return Proto::DataType_IsValid(type) ? Proto::DataType_Name(Proto::DataType(type))
                                             : "data type " + std::to_string(type);
    }

    // The external-data file's bytes [offset, offset + length), inside modelDir only.
    std::string readExternal(
        const Proto& proto, const std::filesystem::path& modelDir, int64_t wanted, const std::string& what)
    {
        std::string location;
        int64_t offset = 0, length = -1;
        for (const auto& kv : proto.external_data()) {
            if (kv.key() == "location") {
                location = kv.value();
            } else if (kv.key() == "offset" || kv.key() == "length") {
                int64_t v = 0;
                try {
                    size_t used = 0;
                    v = std::stoll(kv.value(), &used);
                    if (used != kv.value().size() || v < 0)
                        throw std::invalid_argument("");
                } catch (const std::exception&) {
                    throw InputError(
                        what + ": external data " + kv.key() + " \"" + kv.value() + "\" is not a non-negative integer");
                }
                (kv.key() == "offset" ? offset : length) = v;
            }
        }
        if (location.empty())
            throw InputError(what + ": external data without a \"location\"");
        const std::filesystem::path rel(location);
        const std::filesystem::path dir = std::filesystem::weakly_canonical(modelDir.empty() ? "." : modelDir);
        const std::filesystem::path file = std::filesystem::weakly_canonical(dir / rel);
        const auto [dirEnd, fileIt] = std::mismatch(dir.begin(), dir.end(), file.begin(), file.end());
        if (rel.is_absolute() || dirEnd != dir.end() || file == dir)
            throw InputError(what + ": external data \"" + location
                + "\" is outside the model's folder; ConvScope reads weights only from files next to the model");
        if (length >= 0 && length != wanted)
            throw InputError(what + ": external data length " + std::to_string(length) + " bytes but the shape needs "
                + std::to_string(wanted));
        std::ifstream in(file, std::ios::binary);
        if (!in)
            throw InputError(what + ": cannot open external data file \"" + location + "\"");
        in.seekg(0, std::ios::end);
        const int64_t size = int64_t(in.tellg());
        if (offset > size || size - offset < wanted)
            throw InputError(what + ": external data file \"" + location + "\" has " + std::to_string(size)
                + " bytes, too few for " + std::to_string(wanted) + " bytes at offset " + std::to_string(offset));
        std::string bytes(size_t(wanted), '\0');
        in.seekg(offset);
        in.read(bytes.data(), std::streamsize(wanted));
        if (in.gcount() != wanted)
            throw InputError(what + ": reading external data file \"" + location + "\" failed");
        return bytes;
    }

    template <typename T> T loadLE(const char* p)
    {
        T v;
        std::memcpy(&v, p, sizeof(T)); // ONNX raw_data is little-endian, as this machine is
        return v;
    }

} // namespace

int64_t ConstTensor::numel() const { return isFloat ? int64_t(f.size()) : int64_t(i.size()); }

std::vector<int64_t> ConstTensor::ints(const std::string& what) const
{
    if (!isFloat)
        return i;
    std::vector<int64_t> out;
    out.reserve(f.size());
    for (float v : f) {
        if (!(std::fabs(v) < 9.0e15f) || v != std::floor(v))
            throw InputError(what + ": expected whole numbers, got " + std::to_string(v));
        out.push_back(int64_t(v));
    }
    return out;
}

int64_t elementCount(const std::vector<int64_t>& dims, const std::string& what)
{
    int64_t n = 1;
    for (int64_t d : dims) {
        if (d < 0)
            throw InputError(what + ": negative dimension in " + npyDimsText(dims));
        n = checkedMul(n, d, what + ": the element count of " + npyDimsText(dims));
    }
    return n;
}

ConstTensor readTensor(const Proto& proto, const std::filesystem::path& modelDir, const std::string& what)
{
    ConstTensor t;
    t.dims.assign(proto.dims().begin(), proto.dims().end());
    const int64_t n = elementCount(t.dims, what);
    const int type = proto.data_type();
    const size_t esize = elementSize(type);
    if (esize == 0)
        throw InputError(what + ": tensors of type " + typeName(type)
            + " are not read by ConvScope (it takes FLOAT, DOUBLE, INT64, INT32, INT8, UINT8, BOOL)");
    t.isFloat = type == Proto::FLOAT || type == Proto::DOUBLE;
    // What the tensor will occupy here, before anything of that size is allocated.
    checkHostAllocation(checkedMul(n, int64_t(t.isFloat ? sizeof(float) : sizeof(int64_t)), what), what);
    const int64_t bytesWanted = checkedMul(n, int64_t(esize), what);

    std::string external;
    const std::string* raw = nullptr;
    if (proto.data_location() == Proto::EXTERNAL) {
        external = readExternal(proto, modelDir, bytesWanted, what);
        raw = &external;
    } else if (proto.has_raw_data()) {
        raw = &proto.raw_data();
    }
    if (raw) {
        if (int64_t(raw->size()) != bytesWanted)
            throw InputError(what + ": shape " + npyDimsText(t.dims) + " of " + typeName(type) + " needs "
                + std::to_string(bytesWanted) + " bytes but the data has " + std::to_string(raw->size()));
        const char* p = raw->data();
        if (t.isFloat)
            t.f.resize(size_t(n));
        else
            t.i.resize(size_t(n));
        for (int64_t k = 0; k < n; ++k, p += esize) {
            switch (type) {
            case Proto::FLOAT:
                t.f[size_t(k)] = loadLE<float>(p);
                break;
            case Proto::DOUBLE:
                t.f[size_t(k)] = float(loadLE<double>(p));
                break;
            case Proto::INT64:
                t.i[size_t(k)] = loadLE<int64_t>(p);
                break;
            case Proto::INT32:
                t.i[size_t(k)] = loadLE<int32_t>(p);
                break;
            case Proto::INT8:
                t.i[size_t(k)] = loadLE<int8_t>(p);
                break;
            default:
                t.i[size_t(k)] = loadLE<uint8_t>(p);
                break;
            }
        }
        return t;
    }
    // The typed fields: float_data, double_data, int64_data, int32_data (which also holds int8, uint8, bool).
    const auto check = [&](int64_t have) {
        if (have != n)
            throw InputError(what + ": shape " + npyDimsText(t.dims) + " needs " + std::to_string(n)
                + " values but the tensor has " + std::to_string(have));
    };
    switch (type) {
    case Proto::FLOAT:
        check(proto.float_data_size());
        t.f.assign(proto.float_data().begin(), proto.float_data().end());
        break;
    case Proto::DOUBLE:
        check(proto.double_data_size());
        for (double v : proto.double_data())
            t.f.push_back(float(v));
        break;
    case Proto::INT64:
        check(proto.int64_data_size());
        t.i.assign(proto.int64_data().begin(), proto.int64_data().end());
        break;
    default:
        check(proto.int32_data_size());
        t.i.assign(proto.int32_data().begin(), proto.int32_data().end());
        break;
    }
    return t;
}

} // namespace convscope::onnx
