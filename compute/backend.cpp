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

Selection Selection::parse(const std::string& text)
{
    static const std::string kFused = "+fused";
    std::string s = text;
    bool fused = false;
    if (s.size() > kFused.size() && s.compare(s.size() - kFused.size(), kFused.size(), kFused) == 0) {
        fused = true;
        s.resize(s.size() - kFused.size());
    }
    const auto dot = s.find('.');
    if (dot == std::string::npos || dot == 0 || dot + 1 == s.size() || s.find('+') != std::string::npos)
        throw InputError("selection \"" + text
            + "\" must be backend.algorithm, optionally with +fused, e.g. cpu.direct or cuda.tiled+fused");
    return { s.substr(0, dot), s.substr(dot + 1), fused };
}

} // namespace convscope
