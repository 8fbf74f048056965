#include "compute/onnx/onnx_attributes.h"

#include "compute/error.h"

namespace convscope::onnx {

Attributes::Attributes(const ::onnx::NodeProto& node, std::string where)
    : m_node(node)
    , m_where(std::move(where))
{
}

void Attributes::fail(const std::string& message) const { throw InputError(m_where + ": " + message); }

const ::onnx::AttributeProto* Attributes::find(const std::string& name) const
{
    for (const auto& a : m_node.attribute())
        if (a.name() == name)
            return &a;
    return nullptr;
}

const ::onnx::AttributeProto* Attributes::typed(
    const std::string& name, ::onnx::AttributeProto::AttributeType type) const
{
    const auto* a = find(name);
    if (!a)
        return nullptr;
    // Old exporters leave `type` unset (0); trust the field that is filled then.
    if (a->type() != type && a->type() != ::onnx::AttributeProto::UNDEFINED)
        fail("attribute \"" + name + "\" is a " + ::onnx::AttributeProto::AttributeType_Name(a->type()) + ", expected "
            + ::onnx::AttributeProto::AttributeType_Name(type));
    return a;
}

int64_t Attributes::getInt(const std::string& name, int64_t fallback) const
{
    const auto* a = typed(name, ::onnx::AttributeProto::INT);
    return a ? a->i() : fallback;
}

float Attributes::getFloat(const std::string& name, float fallback) const
{
    const auto* a = typed(name, ::onnx::AttributeProto::FLOAT);
    return a ? a->f() : fallback;
}

std::string Attributes::getString(const std::string& name, const std::string& fallback) const
{
    const auto* a = typed(name, ::onnx::AttributeProto::STRING);
    return a ? a->s() : fallback;
}

std::optional<std::vector<int64_t>> Attributes::getInts(const std::string& name) const
{
    const auto* a = typed(name, ::onnx::AttributeProto::INTS);
    if (!a)
        return std::nullopt;
    return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

std::optional<std::vector<float>> Attributes::getFloats(const std::string& name) const
{
    const auto* a = typed(name, ::onnx::AttributeProto::FLOATS);
    if (!a)
        return std::nullopt;
    return std::vector<float>(a->floats().begin(), a->floats().end());
}

const ::onnx::TensorProto* Attributes::getTensor(const std::string& name) const
{
    const auto* a = typed(name, ::onnx::AttributeProto::TENSOR);
    return a ? &a->t() : nullptr;
}

} // namespace convscope::onnx
