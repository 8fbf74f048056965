// The model and graph level of the import: parse with the generated protobuf classes, check the opset, read the
// initializers, find the input, walk the nodes in order (folding constants, converting the rest), check the output.
#include "compute/onnx/onnx_import.h"

#include "compute/error.h"
#include "compute/onnx/onnx_fold.h"
#include "compute/onnx/onnx_fold_patterns.h"
#include "compute/onnx/onnx_graph.h"

#include <google/protobuf/stubs/common.h>
#include <onnx/onnx_pb.h>
#include <onnx/version_converter/convert.h>

#include <algorithm>
#include <set>

namespace convscope::onnx {

namespace {

    // 6: the PyTorch-converted backend tests in libonnx-testdata; the operators ConvScope takes read alike from 6 to 7.
    constexpr int64_t kMinOpset = 6, kMaxOpset = 21;

    int64_t defaultOpset(const ::onnx::ModelProto& model, const std::string& what)
    {
        for (const auto& o : model.opset_import())
            if (o.domain().empty() || o.domain() == "ai.onnx")
                return o.version();
        if (model.opset_import_size() == 0 && model.ir_version() > 0 && model.ir_version() < 3)
            return 1;
        throw InputError(what + ": the model imports no version of the default ONNX operator set");
    }

    // The network's input from the graph input's type: [N, C, H, W] or [N, F]; a symbolic first dimension is the
    // batch.
    InputSpec readInput(const ::onnx::ValueInfoProto& v, int64_t batch, const std::string& what)
    {
        const std::string where = what + ": graph input \"" + v.name() + "\"";
        if (!v.type().has_tensor_type())
            throw InputError(where + " is not a tensor");
        const auto& tt = v.type().tensor_type();
        if (tt.elem_type() != ::onnx::TensorProto::FLOAT)
            throw InputError(where + " has element type "
                + (::onnx::TensorProto::DataType_IsValid(tt.elem_type())
                        ? ::onnx::TensorProto::DataType_Name(::onnx::TensorProto::DataType(tt.elem_type()))
                        : std::to_string(tt.elem_type()))
                + "; ConvScope takes a FLOAT input");
        if (!tt.has_shape())
            throw InputError(where + " has no shape; ConvScope needs its dims (1 to 6 of them)");
        std::vector<int64_t> dims;
        for (int k = 0; k < tt.shape().dim_size(); ++k) {
            const auto& d = tt.shape().dim(k);
            if (d.has_dim_value() && d.dim_value() > 0) {
                dims.push_back(d.dim_value());
            } else if (k == 0) {
                dims.push_back(batch > 0 ? batch : 1);
            } else {
                throw InputError(where + ": dimension " + std::to_string(k) + " is "
                    + (d.has_dim_param() ? "symbolic (\"" + d.dim_param() + "\")" : "not a positive number")
                    + "; ConvScope needs fixed channel and image sizes (export the model with a fixed input size)");
            }
        }
        if (batch > 0 && !dims.empty())
            dims[0] = batch;
        if (dims.empty() || dims.size() > size_t(Shape::kMaxRank))
            throw InputError(where + " has shape " + npyDimsText(dims) + "; ConvScope takes tensors of 1 to "
                + std::to_string(Shape::kMaxRank) + " dims");
        InputSpec in = InputSpec::ofDims(dims, "random");
        return in;
    }

    // A model older than opset 6 through ONNX's own version converter (libonnx), to the first opset ConvScope reads:
    // its adapters rewrite what changed on the way (BatchNormalization's consumed_inputs, Add's broadcast, ...).
    ::onnx::ModelProto olderOpsetConverted(::onnx::ModelProto model, int64_t opset, const std::string& what)
    {
        if (model.opset_import_size() == 0) { // IR version < 3: opset 1 implied, the converter wants it named
            auto* o = model.add_opset_import();
            o->set_domain("");
            o->set_version(opset);
        }
        if (model.ir_version() < 3)
            model.set_ir_version(3);
        // The converter trusts its input: a node reading a value nothing defines crashed inside it (the fuzz preset
        // found one), so the graph's names are checked first (ONNX's full checker also wants every value typed,
        // which old exporters did not write). ConvScope reads no control flow, so subgraphs are refused here too.
        const ::onnx::GraphProto& g = model.graph();
        std::set<std::string> defined;
        for (const auto& v : g.input())
            defined.insert(v.name());
        for (const auto& t : g.initializer())
            defined.insert(t.name());
        for (const auto& node : g.node()) {
            const std::string who = "node '" + node.name() + "' (" + node.op_type() + ")";
            for (const auto& a : node.attribute())
                if (a.has_g() || a.graphs_size() > 0)
                    throw InputError(what + ": operator set " + std::to_string(opset) + ": " + who
                        + " holds a subgraph; ConvScope reads no control flow");
            for (const auto& in : node.input())
                if (!in.empty() && !defined.count(in))
                    throw InputError(what + ": operator set " + std::to_string(opset) + ": " + who + " reads '" + in
                        + "', which no graph input, initializer or earlier node defines");
            for (const auto& out : node.output())
                if (!out.empty() && !defined.insert(out).second)
                    throw InputError(what + ": operator set " + std::to_string(opset) + ": " + who + " writes '" + out
                        + "', which is already defined");
        }
        for (const auto& v : g.output())
            if (!defined.count(v.name()))
                throw InputError(what + ": operator set " + std::to_string(opset) + ": the graph output '" + v.name()
                    + "' is never computed");
        try {
            return ::onnx::version_conversion::ConvertVersion(model, int(kMinOpset));
        } catch (const std::exception& e) {
            throw InputError(what + ": operator set " + std::to_string(opset) + "; ONNX's version converter could not "
                + "bring it to opset " + std::to_string(kMinOpset) + ", the first ConvScope reads: " + e.what());
        }
    }

} // namespace

std::string supportedOperators() { return supportedOperatorList(); }

Network importModel(
    const std::string& bytes, const std::string& what, const std::filesystem::path& modelDir, int64_t batch)
{
    ImportOptions o;
    o.batch = batch;
    return importModel(bytes, what, modelDir, o);
}

Network importModel(const std::string& bytes, const std::string& what, const std::filesystem::path& modelDir,
    const ImportOptions& options)
{
    ::onnx::ModelProto model;
    if (bytes.empty() || !model.ParseFromString(bytes))
        throw InputError(what + ": not a valid ONNX model (the protobuf does not parse; a truncated file?)");
    if (!model.has_graph() || model.graph().node_size() == 0)
        throw InputError(what + ": the ONNX model has no graph nodes (a truncated or different protobuf file?)");
    GraphBuilder g;
    g.modelDir = modelDir;
    g.opset = defaultOpset(model, what);
    if (g.opset >= 1 && g.opset < kMinOpset) {
        model = olderOpsetConverted(std::move(model), g.opset, what);
        g.opset = defaultOpset(model, what);
    }
    if (g.opset < kMinOpset || g.opset > kMaxOpset)
        throw InputError(what + ": operator set " + std::to_string(g.opset) + "; ConvScope reads opsets "
            + std::to_string(kMinOpset) + " to " + std::to_string(kMaxOpset)
            + " (convert the model with onnx.version_converter)");
    for (const auto& o : model.opset_import())
        if (!o.domain().empty() && o.domain() != "ai.onnx" && o.domain() != "ai.onnx.ml")
            for (const auto& n : model.graph().node())
                if (n.domain() == o.domain())
                    throw InputError(what + ": node \"" + n.name() + "\" (" + n.op_type() + ") is from the operator "
                        + "domain \"" + o.domain() + "\"; ConvScope takes the standard ONNX operators only");
    const ::onnx::GraphProto& graph = model.graph();
    if (graph.sparse_initializer_size() > 0)
        throw InputError(what + ": sparse initializers are not read by ConvScope");

    for (const auto& init : graph.initializer()) {
        if (init.name().empty())
            throw InputError(what + ": an initializer without a name");
        g.constants[init.name()] = readTensor(init, modelDir, what + ": initializer \"" + init.name() + "\"");
    }
    for (const auto& [name, value] : options.bound)
        g.constants[name] = value;

    // The network's input: the first graph input that is neither an initializer nor bound to a constant. Any
    // further one would be a second network input, which ConvScope does not have.
    const ::onnx::ValueInfoProto* input = nullptr;
    for (const auto& v : graph.input()) {
        if (g.isConstant(v.name()))
            continue;
        if (input)
            throw InputError(what + ": the model has a second input \"" + v.name() + "\" (after \"" + input->name()
                + "\"); ConvScope networks have one input");
        input = &v;
    }
    if (!input)
        throw InputError(what + ": the model has no input that is not an initializer");
    g.net.input = readInput(*input, options.batch, what);
    g.net.name = graph.name().empty() ? what : graph.name();
    g.net.baseDir = modelDir;
    g.activations[input->name()] = Activation { -1, g.net.input.shape() };

    for (const auto& n : graph.node())
        for (const auto& in : n.input())
            ++g.uses[in];
    for (const auto& out : graph.output())
        ++g.uses[out.name()];

    // Subgraphs that are one layer (the Erf form of GELU): added where their first node is, the rest skipped.
    const PatternFolds patterns = findFoldablePatterns(graph, g.constants, g.uses, g.opset, modelDir);
    for (int k = 0; k < graph.node_size(); ++k) {
        const ::onnx::NodeProto& node = graph.node(k);
        if (patterns.skip.count(k))
            continue;
        const std::string where = what + ": node " + std::to_string(k) + " ("
            + (node.name().empty() ? std::string("unnamed") : "\"" + node.name() + "\"") + ", " + node.op_type() + ")";
        const Attributes a(node, where);
        bool allConstant = true;
        std::vector<const ConstTensor*> inputs;
        for (const auto& in : node.input()) {
            if (in.empty()) {
                inputs.push_back(nullptr);
                continue;
            }
            if (g.isConstant(in)) {
                inputs.push_back(&g.constants[in]);
                continue;
            }
            if (!g.isActivation(in) && !g.wide.count(in) && !g.empty.count(in)) // held back: GraphBuilder::wide, empty
                a.fail("reads tensor \"" + in + "\", which no graph input, initializer or earlier node defines (an "
                    + "undefined name, a cycle, or nodes out of topological order)");
            allConstant = false;
            inputs.push_back(nullptr);
        }
        if (node.output_size() == 0)
            a.fail("a node without outputs");
        if (auto it = patterns.at.find(k); it != patterns.at.end()) {
            const FoldedPattern& f = it->second;
            const ResolvedPattern r = resolveFoldedPattern(f, g.activation(f.input, a).shape, g.constants, where);
            g.addLayer(g.layerName(node, size_t(k), "_" + layerTypeName(f.spec)), r.spec, { f.input }, f.output, a,
                r.embedded);
            continue;
        }
        if (allConstant && isFoldable(node.op_type())) {
            std::vector<ConstTensor> out = foldNode(node, inputs, a, g.opset, modelDir);
            for (size_t o = 0; o < out.size() && int(o) < node.output_size(); ++o)
                g.constants[node.output(int(o))] = std::move(out[o]);
            continue;
        }
        if ((node.op_type() == "Shape" || node.op_type() == "Size") && node.input_size() == 1
            && g.isActivation(node.input(0))) {
            // Every shape is known at import: the shape (start and end: opset 15) or the element count of a layer's
            // output folds to a constant, and so do the subgraphs exports compute from it (flatten, padding, a
            // class token's Expand, a mask).
            const Shape s = g.activation(node.input(0), a).shape;
            const std::vector<int64_t> dims = s.dims();
            if (node.op_type() == "Size") {
                g.constants[node.output(0)] = ConstTensor { {}, false, {}, { elementCount(dims, a.where()) } };
                continue;
            }
            const int64_t r = int64_t(dims.size());
            int64_t start = a.getInt("start", 0), end = a.getInt("end", r);
            start = std::clamp(start < 0 ? start + r : start, int64_t(0), r);
            end = std::clamp(end < 0 ? end + r : end, int64_t(0), r);
            ConstTensor c;
            c.isFloat = false;
            for (int64_t d = start; d < end; ++d)
                c.i.push_back(dims[size_t(d)]);
            c.dims = { int64_t(c.i.size()) };
            g.constants[node.output(0)] = std::move(c);
            continue;
        }
        try {
            convertNode(g, node, size_t(k), a);
        } catch (const google::protobuf::FatalException& e) {
            // A converter read an input the node does not have (protobuf checks the index and throws): the fuzz
            // preset found a Reshape of one input. The node is malformed, not the importer's state.
            a.fail("the node lacks an input or field its operator needs (" + e.message() + ")");
        }
    }

    if (graph.output_size() != 1)
        throw InputError(what + ": the model has " + std::to_string(graph.output_size())
            + " outputs; ConvScope follows networks with one output");
    const std::string& outName = graph.output(0).name();
    const auto it = g.activations.find(outName);
    if (const auto e = g.empty.find(outName); it == g.activations.end() && e != g.empty.end())
        throw InputError(e->second);
    if (const auto w = g.wide.find(outName); it == g.activations.end() && w != g.wide.end())
        throw InputError(w->second.why);
    if (it == g.activations.end())
        throw InputError(what + ": the output \"" + outName + "\" is "
            + (g.isConstant(outName) ? "a constant" : "not computed by any node"));
    if (g.net.layers.empty() || it->second.layer != int(g.net.layers.size()) - 1)
        throw InputError(what + ": the output \"" + outName + "\" is not the last layer's output (layer \""
            + (it->second.layer < 0 ? std::string(kNetworkInputName) : g.net.layers[size_t(it->second.layer)].name)
            + "\"); ConvScope shows networks whose last layer is the output");
    return std::move(g.net);
}

} // namespace convscope::onnx
