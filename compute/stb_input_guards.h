// Checks and repairs applied to an image file's bytes before Debian's stb_image (2.27) sees them. Each one
// answers a defect the image fuzzer (tests/fuzz/fuzz_image.cpp) found inside stb itself; the inputs that
// showed them are kept in tests/data/fuzz/image/ and replayed by the tests. Kept apart from image_input.cpp
// so the list of what stb cannot be trusted with is in one place.
#pragma once

#include <string>
#include <string_view>

namespace convscope {

// The bytes to hand to stb: `bytes` itself, or a repaired copy kept in `repaired` that decodes to the same
// picture. Throws InputError (starting with `what`) for a file that must be refused before stb reads it.
std::string_view guardStbInput(const std::string& bytes, const std::string& what, std::string& repaired);

} // namespace convscope
