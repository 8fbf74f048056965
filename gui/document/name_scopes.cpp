#include "gui/document/name_scopes.h"

#include "compute/network.h"

#include <cctype>

namespace convscope::gui {

std::vector<std::string> scopeChain(const std::string& name)
{
    // A name with a slash is an ONNX node path (its dots belong to the parts: "/layer1/layer1.0/conv1/Conv");
    // otherwise dots separate the parts.
    const char sep = name.find('/') != std::string::npos ? '/' : '.';
    std::vector<std::string> chain;
    size_t start = name[0] == sep ? 1 : 0;
    for (size_t at = name.find(sep, start); at != std::string::npos; at = name.find(sep, at + 1)) {
        chain.push_back(name.substr(0, at));
    }
    return chain;
}

std::string scopeLabel(const std::string& scope)
{
    const char sep = scope.find('/') != std::string::npos ? '/' : '.';
    const size_t at = scope.rfind(sep);
    if (at == std::string::npos || at + 1 >= scope.size())
        return scope;
    const std::string last = scope.substr(at + 1);
    const bool numeric = std::isdigit(static_cast<unsigned char>(last[0])) != 0;
    if (!numeric || sep == '/')
        return last;
    const size_t before = scope.rfind(sep, at - 1);
    return before == std::string::npos ? scope : scope.substr(before + 1);
}

ScopeTree scopeTree(const Network& net)
{
    ScopeTree tree;
    std::vector<std::vector<std::string>> all(net.layers.size());
    std::map<std::string, std::vector<size_t>> members;
    for (size_t i = 0; i < net.layers.size(); ++i) {
        all[i] = scopeChain(net.layers[i].name);
        for (const auto& s : all[i])
            members[s].push_back(i);
    }
    tree.chains.resize(net.layers.size());
    for (size_t i = 0; i < all.size(); ++i)
        for (const auto& s : all[i])
            if (members[s].size() >= 2)
                tree.chains[i].push_back(s);
    for (auto& [scope, layers] : members)
        if (layers.size() >= 2)
            tree.members.emplace(scope, std::move(layers));
    return tree;
}

std::string blockOf(const ScopeTree& tree, size_t layer)
{
    if (layer >= tree.chains.size() || tree.chains[layer].empty())
        return {};
    return tree.chains[layer].back();
}

} // namespace convscope::gui
