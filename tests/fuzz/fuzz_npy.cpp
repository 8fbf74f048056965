// libFuzzer target: the .npy reader on arbitrary bytes. It must either return an array whose element count
// matches its shape or throw InputError; anything else (a crash, a leak, a sanitizer report, another
// exception type, an allocation past the budget) is a finding. A parsed array must also survive a write and a
// re-read unchanged, so the writer and the reader agree on every header they produce.
#include "compute/error.h"
#include "compute/memory_budget.h"
#include "compute/npy.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

extern "C" int LLVMFuzzerInitialize(int*, char***)
{
    convscope::setHostMemoryBudget(int64_t(256) << 20); // a fuzzer input never legitimately needs more
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    const std::string bytes(reinterpret_cast<const char*>(data), size);
    convscope::NpyArray a;
    try {
        a = convscope::parseNpy(bytes, "fuzz.npy");
    } catch (const convscope::InputError&) {
        return 0;
    }
    if (int64_t(a.data.size()) != a.numel())
        std::abort();
    const std::string again = convscope::serializeNpy(a.dims, a.data.data());
    const convscope::NpyArray b = convscope::parseNpy(again, "round trip");
    if (b.dims != a.dims || b.data.size() != a.data.size()
        || (!a.data.empty() && std::memcmp(a.data.data(), b.data.data(), a.data.size() * sizeof(float)) != 0))
        std::abort();
    return 0;
}
