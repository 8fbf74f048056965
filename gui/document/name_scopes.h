// How layer names nest. Exporters name layers by the module that made them: PyTorch's state-dict names
// ("layer1.0.conv1": in layer1 ▸ layer1.0) and ONNX node names from torch.onnx ("/inception3a/branch2/conv/Conv": in
// inception3a ▸ branch2 ▸ conv). The graph view groups layers into collapsible blocks by these scopes and the timing
// chart sums a block's time. A scope is named by its full prefix, so two scopes with the same last part stay apart.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace convscope {
struct Network;
}

namespace convscope::gui {

// The scopes a layer name lies in, outermost first: "layer1.0.conv1" → {"layer1", "layer1.0"};
// "/a/b/Conv" → {"/a", "/a/b"}; a name without separators → {}.
std::vector<std::string> scopeChain(const std::string& name);
// The last part of a scope, to label its block: "/inception3a/branch2" → "branch2", "layer1.0" → "layer1.0"
// (a numeric part keeps its parent: "0" alone says nothing).
std::string scopeLabel(const std::string& scope);

struct ScopeTree {
    std::vector<std::vector<std::string>> chains; // per layer: its scopes holding two layers or more, outermost first
    std::map<std::string, std::vector<size_t>> members; // scope → its layers, in network order
};
ScopeTree scopeTree(const Network& net);
// The block a layer's time is summed into: its innermost scope of two layers or more; "" when it stands alone.
std::string blockOf(const ScopeTree& tree, size_t layer);

} // namespace convscope::gui
