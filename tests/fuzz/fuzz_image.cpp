// libFuzzer target: the image decoder (stb_image through decodeImageInput) on arbitrary bytes, resized to a
// small network input as the window and the CLI do. It either gives a tensor of the asked shape with every
// value in [0, 1], or throws InputError.
#include "compute/error.h"
#include "compute/image_input.h"
#include "compute/memory_budget.h"

#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerInitialize(int*, char***)
{
    // Small: a header may claim any size, and decoding + resizing a big picture is slow enough to starve the
    // fuzzer of executions. The budget check itself is what is exercised for larger claims.
    convscope::setHostMemoryBudget(int64_t(4) << 20);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    if (size < 1)
        return 0;
    // The first byte picks the channel count the network asks for (1, 3 or 4), the rest is the file.
    const int64_t channels = data[0] % 3 == 0 ? 1 : data[0] % 3 == 1 ? 3 : 4;
    const std::string bytes(reinterpret_cast<const char*>(data + 1), size - 1);
    try {
        const convscope::Tensor t = convscope::decodeImageInput(bytes, "fuzz image", 1, channels, 9, 7);
        if (t.shape().c != channels || t.shape().h != 9 || t.shape().w != 7)
            std::abort();
        for (int64_t i = 0; i < t.numel(); ++i)
            if (!(t.data()[i] >= 0.0f && t.data()[i] <= 1.0f))
                std::abort();
    } catch (const convscope::InputError&) {
    }
    return 0;
}
