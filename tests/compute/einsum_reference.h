// numpy.einsum by its definition, for the Einsum import tests (onnx_einsum_test, onnx_einsum_general_test): every
// assignment of every label, the product of the operands' elements summed into the output's element. A label may
// repeat inside one operand (its diagonal) and there may be any number of operands; a label of size 1 in one operand
// broadcasts against another's.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace convscope::test {

struct EinsumOperand {
    std::string labels; // one letter per axis ("..." written out as letters)
    std::vector<int64_t> dims;
    std::vector<double> v;
};

inline std::vector<double> referenceEinsum(const std::vector<EinsumOperand>& ops, const std::string& out)
{
    std::map<char, int64_t> size;
    for (const EinsumOperand& o : ops)
        for (size_t k = 0; k < o.labels.size(); ++k)
            size[o.labels[k]] = std::max(size[o.labels[k]], o.dims[k]);
    std::vector<char> labels;
    for (const auto& [l, s] : size)
        labels.push_back(l);
    int64_t outCount = 1;
    for (char l : out)
        outCount *= size[l];
    std::vector<double> result(size_t(outCount), 0.0);
    std::map<char, int64_t> at;
    for (char l : labels)
        at[l] = 0;
    const auto offset = [&](const std::string& ls, const std::vector<int64_t>& dims) {
        int64_t o = 0;
        for (size_t k = 0; k < ls.size(); ++k)
            o = o * dims[k] + (dims[k] == 1 ? 0 : at[ls[k]]);
        return o;
    };
    std::vector<int64_t> outDims;
    for (char l : out)
        outDims.push_back(size[l]);
    for (;;) {
        double p = 1;
        for (const EinsumOperand& o : ops)
            p *= o.v[size_t(offset(o.labels, o.dims))];
        result[size_t(offset(out, outDims))] += p;
        size_t k = labels.size();
        for (; k-- > 0;) {
            if (++at[labels[k]] < size[labels[k]])
                break;
            at[labels[k]] = 0;
        }
        if (k == size_t(-1))
            break;
    }
    return result;
}

} // namespace convscope::test
