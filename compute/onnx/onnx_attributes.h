// A node's attributes by name, with defaults, and the words "node 12 (Conv_3, Conv)" for messages.
#pragma once

#include "compute/onnx/onnx_tensor.h"

#include <onnx/onnx_pb.h>

#include <optional>
#include <string>
#include <vector>

namespace convscope::onnx {

class Attributes {
public:
    Attributes(const ::onnx::NodeProto& node, std::string where);

    const std::string& where() const { return m_where; }
    [[noreturn]] void fail(const std::string& message) const;

    bool has(const std::string& name) const { return find(name) != nullptr; }
    int64_t getInt(const std::string& name, int64_t fallback) const;
    float getFloat(const std::string& name, float fallback) const;
    std::string getString(const std::string& name, const std::string& fallback) const;
    std::optional<std::vector<int64_t>> getInts(const std::string& name) const;
    std::optional<std::vector<float>> getFloats(const std::string& name) const;
    const ::onnx::TensorProto* getTensor(const std::string& name) const;

private:
    const ::onnx::AttributeProto* find(const std::string& name) const;
    const ::onnx::AttributeProto* typed(const std::string& name, ::onnx::AttributeProto::AttributeType type) const;

    const ::onnx::NodeProto& m_node;
    std::string m_where;
};

} // namespace convscope::onnx
