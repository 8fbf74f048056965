// libFuzzer target: the network JSON loader followed by shape inference, as the window does on open. A file
// either loads or throws InputError; shape inference never throws (errors are data there); a network that
// loads also saves, and the saved text loads back to the same description (the lossless round trip the
// window's Save relies on).
#include "compute/error.h"
#include "compute/memory_budget.h"
#include "compute/network_json.h"
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
    const std::string text(reinterpret_cast<const char*>(data), size);
    convscope::Network net;
    try {
        // A base folder that does not exist: file paths in the input resolve under it and are never read here.
        net = convscope::parseNetwork(text, "fuzz.json", "/nonexistent-convscope-fuzz");
    } catch (const convscope::InputError&) {
        return 0;
    }
    const convscope::ShapeReport shapes = convscope::inferShapes(net);
    if (shapes.layers.size() != net.layers.size())
        std::abort();
    (void)shapes.firstError();
    const std::string saved = convscope::serializeNetwork(net);
    const convscope::Network back = convscope::parseNetwork(saved, "round trip", "/nonexistent-convscope-fuzz");
    if (!back.sameDescription(net))
        std::abort();
    return 0;
}
