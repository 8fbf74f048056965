#include "compute/backend.h"

#include "compute/error.h"

namespace convscope {

std::string mathModeName(MathMode m) { return m == MathMode::TF32 ? "tf32" : "fp32"; }

MathMode parseMathMode(const std::string& s)
{
    if (s == "fp32")
        return MathMode::FP32;
    if (s == "tf32")
        return MathMode::TF32;
    throw InputError("unknown math mode \"" + s + "\" (use fp32 or tf32)");
}

Selection Selection::parse(const std::string& s)
{
    const auto dot = s.find('.');
    if (dot == std::string::npos || dot == 0 || dot + 1 == s.size())
        throw InputError("selection \"" + s + "\" must be backend.algorithm, e.g. cpu.direct or cuda.tiled");
    return { s.substr(0, dot), s.substr(dot + 1) };
}

} // namespace convscope
