#include "compute/backend.h"

#include "compute/error.h"
#include "compute/training/training.h"

namespace convscope {

std::string mathModeName(MathMode m)
{
    switch (m) {
    case MathMode::TF32:
        return "tf32";
    case MathMode::FP16:
        return "fp16";
    case MathMode::BF16:
        return "bf16";
    case MathMode::FP32:
        break;
    }
    return "fp32";
}

MathMode parseMathMode(const std::string& s)
{
    for (MathMode m : { MathMode::FP32, MathMode::TF32, MathMode::FP16, MathMode::BF16 })
        if (s == mathModeName(m))
            return m;
    throw InputError("unknown math mode \"" + s + "\" (use " + kMathModeHelp + ")");
}

double DeviceCeilings::peakFor(MathMode m) const
{
    const auto it = mathGflops.find(mathModeName(m));
    return it != mathGflops.end() && it->second > 0 ? it->second : peakGflops;
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

std::unique_ptr<TrainingSession> Backend::createTrainingSession(const std::string&, const SessionOptions&)
{
    return nullptr;
}

} // namespace convscope
