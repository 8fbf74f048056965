// Attribute setters for the nodes the ONNX exporter writes (onnx_export.cpp): one attribute of each type.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <vector>

namespace convscope::onnx {

inline void ints(::onnx::NodeProto* n, const char* name, std::vector<int64_t> v)
{
    ::onnx::AttributeProto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::INTS);
    for (int64_t x : v)
        a->add_ints(x);
}
inline void integer(::onnx::NodeProto* n, const char* name, int64_t v)
{
    ::onnx::AttributeProto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::INT);
    a->set_i(v);
}
inline void real(::onnx::NodeProto* n, const char* name, double v)
{
    ::onnx::AttributeProto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::FLOAT);
    a->set_f(float(v));
}
inline void text(::onnx::NodeProto* n, const char* name, const std::string& v)
{
    ::onnx::AttributeProto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::STRING);
    a->set_s(v);
}

} // namespace convscope::onnx
