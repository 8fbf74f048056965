// libFuzzer target: the ONNX reader (compute/onnx/) followed by shape inference, as `convscope --open model.onnx`
// does. Any bytes either import or throw InputError — truncated or random protobuf, cycles, undefined tensors,
// overflowing dims, initializers shorter than their shape or claiming gigabytes, external data outside the model's
// folder — never a crash, a hang, or memory past the budget (256 MiB here, under libFuzzer's RSS limit).
#include "compute/error.h"
#include "compute/memory_budget.h"
#include "compute/onnx/onnx_import.h"
#include "compute/shape_inference.h"

#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerInitialize(int*, char***)
{
    convscope::setHostMemoryBudget(int64_t(256) << 20);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    const std::string bytes(reinterpret_cast<const char*>(data), size);
    convscope::Network net;
    try {
        // External data resolves inside a folder that does not exist: nothing outside it is ever opened.
        net = convscope::onnx::importModel(bytes, "fuzz.onnx", "/nonexistent-convscope-fuzz", 0);
    } catch (const convscope::InputError&) {
        return 0;
    }
    // What imports is a valid network: every layer has a shape.
    const convscope::ShapeReport shapes = convscope::inferShapes(net);
    if (!shapes.ok())
        std::abort();
    return 0;
}
