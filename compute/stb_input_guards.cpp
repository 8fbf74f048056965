#include "compute/stb_input_guards.h"

#include "compute/error.h"

#include <algorithm>
#include <cstdint>

namespace convscope {

namespace {

    // stb parses the numbers of a PNM header (P5/P6) into an int without an overflow check: "P6 10000000000 ..."
    // is undefined behaviour inside stb. Read those numbers first, exactly as stb does, and refuse any above
    // stb's own limit of 2^24 before it can overflow.
    void checkPnmHeader(const std::string& bytes, const std::string& what)
    {
        if (bytes.size() < 2 || bytes[0] != 'P' || (bytes[1] != '5' && bytes[1] != '6'))
            return;
        const auto isSpace = [](char c) { return c == ' ' || (c >= '\t' && c <= '\r'); };
        size_t i = 2;
        for (int number = 0; number < 3; ++number) {
            while (i < bytes.size() && (isSpace(bytes[i]) || bytes[i] == '#')) {
                if (bytes[i] == '#')
                    while (i < bytes.size() && bytes[i] != '\n' && bytes[i] != '\r')
                        ++i;
                else
                    ++i;
            }
            int64_t value = 0;
            while (i < bytes.size() && bytes[i] >= '0' && bytes[i] <= '9') {
                value = value * 10 + (bytes[i++] - '0');
                if (value > (int64_t(1) << 24))
                    throw InputError(what + ": cannot decode the image (a PNM header number is too large)");
            }
            // stb reads 16-bit PNM samples past the end of its buffer (a heap overflow).
            if (number == 2 && value > 255)
                throw InputError(what + ": cannot decode the image (16-bit PNM files are not supported; save 8-bit)");
        }
    }

    uint32_t bigEndian32(const std::string& bytes, size_t at)
    {
        return uint32_t(uint8_t(bytes[at])) << 24 | uint32_t(uint8_t(bytes[at + 1])) << 16
            | uint32_t(uint8_t(bytes[at + 2])) << 8 | uint32_t(uint8_t(bytes[at + 3]));
    }

    // A PNG whose first IDAT chunk is empty makes stb call memcpy(nullptr, src, 0) (it has not allocated the
    // compressed-data buffer yet): undefined behaviour that UBSan reports. An empty IDAT is legal and carries
    // no data, so the picture is the same without it: drop every empty IDAT (its 12 bytes of length, type and
    // CRC, or what there is of them at the end of a cut-off file; stb reads the header before it finds the
    // CRC missing). Chunks are walked as stb walks them, as far as they are whole; what follows a damaged chunk
    // is stb's to refuse.
    bool withoutEmptyPngData(const std::string& bytes, std::string& repaired)
    {
        static constexpr std::string_view signature = "\x89PNG\r\n\x1a\n";
        if (std::string_view(bytes).substr(0, signature.size()) != signature)
            return false;
        bool dropped = false;
        size_t kept = 0; // bytes[0, kept) are already in `repaired` once something was dropped
        for (size_t at = signature.size(); at + 8 <= bytes.size();) {
            const uint64_t length = bigEndian32(bytes, at);
            if (length == 0 && bytes.compare(at + 4, 4, "IDAT") == 0) {
                if (!dropped)
                    repaired.clear();
                repaired.append(bytes, kept, at - kept);
                kept = std::min(at + 12, bytes.size());
                dropped = true;
            }
            if (length > bytes.size() - at - 8)
                break;
            at += 12 + size_t(length);
        }
        if (dropped)
            repaired.append(bytes, kept, std::string::npos);
        return dropped;
    }

} // namespace

std::string_view guardStbInput(const std::string& bytes, const std::string& what, std::string& repaired)
{
    checkPnmHeader(bytes, what);
    if (withoutEmptyPngData(bytes, repaired))
        return repaired;
    return bytes;
}

} // namespace convscope
