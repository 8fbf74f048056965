// Building small ONNX graphs in tests with the generated classes: a one-input model, an INT64 initializer, a node, its
// string and integer attributes, and importing the model's bytes. Shared by the importer tests that write their models
// by hand (onnx_resize_test, onnx_einsum_test, onnx_fold_ops_test).
#pragma once

#include "compute/network.h"
#include "compute/onnx_model.h"

#include <onnx/onnx_pb.h>

#include <initializer_list>
#include <string>
#include <vector>

namespace convscope::test {

// A model named `name` at `opset`: one FLOAT input "x" of `dims`, one output "y" (the nodes are the test's to add).
inline ::onnx::ModelProto oneInputModel(const std::string& name, int opset, const std::vector<int64_t>& dims)
{
    ::onnx::ModelProto m;
    m.set_ir_version(8);
    m.add_opset_import()->set_version(opset);
    auto* g = m.mutable_graph();
    g->set_name(name);
    auto* in = g->add_input();
    in->set_name("x");
    auto* tt = in->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(::onnx::TensorProto::FLOAT);
    for (int64_t d : dims)
        tt->mutable_shape()->add_dim()->set_dim_value(d);
    g->add_output()->set_name("y");
    return m;
}

// A 1-D INT64 initializer (Reshape's shape, Resize's sizes, Slice's bounds).
inline void int64s(::onnx::GraphProto* g, const std::string& name, const std::vector<int64_t>& v)
{
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(::onnx::TensorProto::INT64);
    t->add_dims(int64_t(v.size()));
    for (int64_t i : v)
        t->add_int64_data(i);
}

// A FLOAT initializer of `dims` (none: a scalar), element k (row-major) `value(k)`; returned for later edits.
template <typename Value>
inline ::onnx::TensorProto* floatInitializer(
    ::onnx::GraphProto* g, const std::string& name, const std::vector<int64_t>& dims, Value&& value)
{
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(::onnx::TensorProto::FLOAT);
    int64_t n = 1;
    for (int64_t d : dims) {
        t->add_dims(d);
        n *= d;
    }
    for (int64_t k = 0; k < n; ++k)
        t->add_float_data(float(value(k)));
    return t;
}

// `outs` as a braced list: { "y" } and { "a", "b" } pick this overload over the one-output one below (a list that
// converts to std::initializer_list ranks first).
inline ::onnx::NodeProto* node(::onnx::GraphProto* g, const std::string& op, const std::string& name,
    const std::vector<std::string>& ins, std::initializer_list<std::string> outs)
{
    auto* n = g->add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (const auto& i : ins)
        n->add_input(i);
    for (const auto& o : outs)
        n->add_output(o);
    return n;
}

inline ::onnx::NodeProto* node(::onnx::GraphProto* g, const std::string& op, const std::string& name,
    const std::vector<std::string>& ins, const std::string& out)
{
    return node(g, op, name, ins, { out });
}

inline void text(::onnx::NodeProto* n, const std::string& name, const std::string& v)
{
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::STRING);
    a->set_s(v);
}

inline void integer(::onnx::NodeProto* n, const std::string& name, int64_t v)
{
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::INT);
    a->set_i(v);
}

inline Network import(const ::onnx::ModelProto& m) { return importOnnxBytes(m.SerializeAsString(), "m.onnx", {}, 0); }

} // namespace convscope::test
