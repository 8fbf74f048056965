#include "compute/npy.h"

#include "compute/atomic_file.h"
#include "compute/checked_math.h"
#include "compute/error.h"

#include <bit>
#include <cstring>
#include <optional>

namespace convscope {

namespace {

    constexpr char kMagic[] = "\x93NUMPY";
    constexpr size_t kMagicSize = 6;

    // The header is a Python dict literal. It comes from a file a user picked, so it is parsed as data by this
    // small grammar (strings, True/False, tuples of integers) and never handed to anything that evaluates it.
    struct HeaderValue {
        enum class Kind { String, Bool, Tuple, Other }; // Other: a number or None, valid for no key we know
        Kind kind = Kind::String;
        std::string str;
        bool boolean = false;
        std::vector<int64_t> tuple;
    };

    class HeaderParser {
    public:
        HeaderParser(const std::string& text, const std::string& what)
            : m_text(text)
            , m_what(what)
        {
        }

        std::vector<std::pair<std::string, HeaderValue>> parseDict()
        {
            std::vector<std::pair<std::string, HeaderValue>> entries;
            skipSpace();
            expect('{', "the header must be a dict starting with '{'");
            skipSpace();
            while (peek() != '}') {
                if (atEnd())
                    fail("the header dict is not closed");
                if (peek() != '\'' && peek() != '"')
                    fail("expected a quoted key in the header" + near());
                std::string key = parseString();
                skipSpace();
                expect(':', "expected ':' after key '" + key + "'");
                skipSpace();
                HeaderValue value = parseValue(key);
                for (const auto& e : entries)
                    if (e.first == key)
                        fail("key '" + key + "' appears twice in the header");
                entries.emplace_back(std::move(key), std::move(value));
                skipSpace();
                if (peek() == ',') {
                    ++m_pos;
                    skipSpace();
                } else if (peek() != '}') {
                    fail("expected ',' or '}' in the header" + near());
                }
            }
            ++m_pos;
            skipSpace();
            if (!atEnd())
                fail("unexpected text after the header dict" + near());
            return entries;
        }

    private:
        [[noreturn]] void fail(const std::string& msg) const
        {
            throw InputError(m_what + ": malformed .npy header: " + msg);
        }
        bool atEnd() const { return m_pos >= m_text.size(); }
        char peek() const { return atEnd() ? '\0' : m_text[m_pos]; }
        void skipSpace()
        {
            while (!atEnd() && (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r'))
                ++m_pos;
        }
        void expect(char c, const std::string& msg)
        {
            if (peek() != c)
                fail(msg + near());
            ++m_pos;
        }
        std::string near() const
        {
            if (atEnd())
                return " (at the end)";
            return " (at offset " + std::to_string(m_pos) + ")";
        }

        std::string parseString()
        {
            const char quote = m_text[m_pos++];
            std::string out;
            while (!atEnd() && peek() != quote) {
                // The keys and dtype strings numpy writes never contain escapes; refusing them keeps the
                // grammar honest rather than half-supporting Python's escape rules.
                if (peek() == '\\' || peek() == '\n')
                    fail("escape sequences and newlines are not allowed in header strings");
                out += m_text[m_pos++];
            }
            if (atEnd())
                fail("unterminated string in the header");
            ++m_pos;
            return out;
        }

        int64_t parseInt(const std::string& key)
        {
            if (!(peek() >= '0' && peek() <= '9'))
                fail("'" + key + "' must be a tuple of non-negative integers" + near());
            int64_t v = 0;
            while (peek() >= '0' && peek() <= '9') {
                const int digit = peek() - '0';
                if (__builtin_mul_overflow(v, int64_t { 10 }, &v) || __builtin_add_overflow(v, int64_t { digit }, &v))
                    throw InputError(m_what + ": a dimension in 'shape' overflows a 64-bit count");
                ++m_pos;
            }
            // Python 2 era numpy wrote longs as 3L.
            if (peek() == 'L')
                ++m_pos;
            return v;
        }

        HeaderValue parseValue(const std::string& key)
        {
            HeaderValue v;
            const char c = peek();
            if (c == '\'' || c == '"') {
                v.kind = HeaderValue::Kind::String;
                v.str = parseString();
            } else if (m_text.compare(m_pos, 4, "True") == 0) {
                v.kind = HeaderValue::Kind::Bool;
                v.boolean = true;
                m_pos += 4;
            } else if (m_text.compare(m_pos, 5, "False") == 0) {
                v.kind = HeaderValue::Kind::Bool;
                v.boolean = false;
                m_pos += 5;
            } else if (c == '(') {
                v.kind = HeaderValue::Kind::Tuple;
                ++m_pos;
                skipSpace();
                bool needComma = false; // a one-element tuple must be written (3,)
                while (peek() != ')') {
                    if (atEnd())
                        fail("unterminated tuple for '" + key + "'");
                    v.tuple.push_back(parseInt(key));
                    skipSpace();
                    if (peek() == ',') {
                        ++m_pos;
                        skipSpace();
                        needComma = false;
                    } else if (peek() == ')') {
                        needComma = v.tuple.size() == 1;
                    } else {
                        fail("expected ',' or ')' in '" + key + "'" + near());
                    }
                }
                if (needComma)
                    fail("'" + key + "' is not a tuple: a one-element tuple needs a trailing comma, as in (3,)");
                ++m_pos;
            } else if ((c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.'
                || m_text.compare(m_pos, 4, "None") == 0) {
                // Parsed only so that an extra key such as 'version': 2 is reported as an unknown key.
                v.kind = HeaderValue::Kind::Other;
                if (c == 'N')
                    m_pos += 4;
                while (!atEnd() && std::strchr("0123456789+-.eE", peek()))
                    ++m_pos;
            } else if (c == '[' && key == "descr") {
                fail("'descr' is a list: structured dtypes are not supported (only '<f4' and '<f8')");
            } else if (c == '[') {
                fail("'" + key + "' is a list; a shape is written as a tuple such as (2, 3)");
            } else {
                fail("unsupported value for '" + key + "'" + near());
            }
            return v;
        }

        const std::string& m_text;
        const std::string& m_what;
        size_t m_pos = 0;
    };

    template <typename T> T loadLittleEndian(const char* p)
    {
        T value;
        if constexpr (std::endian::native == std::endian::little) {
            std::memcpy(&value, p, sizeof(T));
        } else {
            char swapped[sizeof(T)];
            for (size_t i = 0; i < sizeof(T); ++i)
                swapped[i] = p[sizeof(T) - 1 - i];
            std::memcpy(&value, swapped, sizeof(T));
        }
        return value;
    }

    void appendLittleEndian(std::string& out, const void* src, size_t size)
    {
        const char* p = static_cast<const char*>(src);
        if constexpr (std::endian::native == std::endian::little) {
            out.append(p, size);
        } else {
            for (size_t i = 0; i < size; ++i)
                out.push_back(p[size - 1 - i]);
        }
    }

    uint64_t readUnsigned(const std::string& bytes, size_t offset, size_t size)
    {
        uint64_t v = 0;
        for (size_t i = 0; i < size; ++i)
            v |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[offset + i])) << (8 * i);
        return v;
    }

    std::string shapeText(const std::vector<int64_t>& dims)
    {
        std::string s = "(";
        for (size_t i = 0; i < dims.size(); ++i) {
            if (i)
                s += ", ";
            s += std::to_string(dims[i]);
        }
        if (dims.size() == 1)
            s += ",";
        return s + ")";
    }

} // namespace

int64_t NpyArray::numel() const
{
    int64_t n = 1;
    for (int64_t d : dims)
        n = checkedMul(n, d, "array");
    return n;
}

NpyArray parseNpy(const std::string& bytes, const std::string& what)
{
    if (bytes.size() < kMagicSize || bytes.compare(0, kMagicSize, kMagic, kMagicSize) != 0)
        throw InputError(what + ": not a .npy file (the magic string \\x93NUMPY is missing)");
    if (bytes.size() < kMagicSize + 2)
        throw InputError(what + ": truncated header (the file ends inside the version)");
    const int major = static_cast<unsigned char>(bytes[6]);
    const int minor = static_cast<unsigned char>(bytes[7]);
    size_t lengthSize = 0;
    if (major == 1 && minor == 0)
        lengthSize = 2;
    else if ((major == 2 || major == 3) && minor == 0)
        lengthSize = 4;
    else
        throw InputError(what + ": unsupported .npy version " + std::to_string(major) + "." + std::to_string(minor)
            + " (1.0, 2.0 and 3.0 are supported)");
    const size_t prefix = kMagicSize + 2 + lengthSize;
    if (bytes.size() < prefix)
        throw InputError(what + ": truncated header (the file ends inside the header length)");
    const uint64_t headerLength = readUnsigned(bytes, kMagicSize + 2, lengthSize);
    if (headerLength > bytes.size() - prefix)
        throw InputError(what + ": header length " + std::to_string(headerLength) + " runs past the end of the file ("
            + std::to_string(bytes.size()) + " bytes)");
    const std::string header = bytes.substr(prefix, headerLength);

    std::optional<std::string> descr;
    std::optional<bool> fortranOrder;
    std::optional<std::vector<int64_t>> dims;
    for (auto& [key, value] : HeaderParser(header, what).parseDict()) {
        if (key == "descr") {
            if (value.kind != HeaderValue::Kind::String)
                throw InputError(what + ": 'descr' must be a dtype string such as '<f4'");
            descr = value.str;
        } else if (key == "fortran_order") {
            if (value.kind != HeaderValue::Kind::Bool)
                throw InputError(what + ": 'fortran_order' must be True or False");
            fortranOrder = value.boolean;
        } else if (key == "shape") {
            if (value.kind != HeaderValue::Kind::Tuple)
                throw InputError(what + ": 'shape' must be a tuple of integers");
            dims = value.tuple;
        } else {
            throw InputError(what + ": unknown key '" + key + "' in the .npy header");
        }
    }
    for (const char* key : { "descr", "fortran_order", "shape" }) {
        if ((key[0] == 'd' && !descr) || (key[0] == 'f' && !fortranOrder) || (key[0] == 's' && !dims))
            throw InputError(what + ": the .npy header has no '" + key + "' key");
    }

    size_t itemSize = 0;
    if (*descr == "<f4")
        itemSize = 4;
    else if (*descr == "<f8")
        itemSize = 8;
    else
        throw InputError(what + ": unsupported dtype '" + *descr
            + "' (only little-endian float32 '<f4' and float64 '<f8' are supported; in NumPy: a.astype('<f4'))");
    if (*fortranOrder)
        throw InputError(
            what + ": Fortran-ordered arrays are not supported (save a C-ordered copy: np.ascontiguousarray(a))");

    NpyArray out;
    out.dims = *dims;
    const std::string countWhat = what + ": shape " + shapeText(out.dims);
    int64_t numel = 1;
    for (int64_t d : out.dims)
        numel = checkedMul(numel, d, countWhat);
    const int64_t expectedBytes = checkedMul(numel, static_cast<int64_t>(itemSize), countWhat);
    const size_t dataBytes = bytes.size() - prefix - headerLength;
    if (static_cast<uint64_t>(expectedBytes) != dataBytes)
        throw InputError(what + ": shape " + shapeText(out.dims) + " of dtype '" + *descr + "' needs "
            + std::to_string(expectedBytes) + " data bytes but the file has " + std::to_string(dataBytes)
            + (static_cast<uint64_t>(expectedBytes) > dataBytes ? " (truncated)" : " (trailing bytes)"));

    out.data.resize(static_cast<size_t>(numel));
    const char* p = bytes.data() + prefix + headerLength;
    if (itemSize == 4) {
        for (int64_t i = 0; i < numel; ++i)
            out.data[i] = loadLittleEndian<float>(p + 4 * i);
    } else {
        for (int64_t i = 0; i < numel; ++i)
            out.data[i] = static_cast<float>(loadLittleEndian<double>(p + 8 * i));
    }
    return out;
}

NpyArray readNpy(const std::filesystem::path& path) { return parseNpy(readFile(path, path.string()), path.string()); }

std::string serializeNpy(const std::vector<int64_t>& dims, const float* data)
{
    const std::string shape = shapeText(dims);
    const std::string what = "cannot write .npy of shape " + shape;
    int64_t numel = 1;
    for (int64_t d : dims) {
        if (d < 0)
            throw InputError("cannot write .npy: negative dimension " + std::to_string(d));
        numel = checkedMul(numel, d, what);
    }
    checkedMul(numel, 4, what);

    std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
    // numpy pads the header with spaces and a final newline so the data starts on a 64-byte boundary,
    // which lets readers memory-map it aligned.
    auto build = [&](size_t lengthSize) {
        const size_t prefix = kMagicSize + 2 + lengthSize;
        const size_t unpadded = prefix + dict.size() + 1;
        const size_t total = (unpadded + 63) / 64 * 64;
        return std::make_pair(prefix, total - prefix);
    };
    auto [prefix, headerLength] = build(2);
    int major = 1;
    if (headerLength > 0xffff) {
        std::tie(prefix, headerLength) = build(4);
        major = 2;
    }
    std::string out;
    out.reserve(prefix + headerLength + static_cast<size_t>(numel) * 4);
    out.append(kMagic, kMagicSize);
    out.push_back(static_cast<char>(major));
    out.push_back(0);
    for (size_t i = 0; i < prefix - kMagicSize - 2; ++i)
        out.push_back(static_cast<char>((headerLength >> (8 * i)) & 0xff));
    out += dict;
    out.append(headerLength - dict.size() - 1, ' ');
    out.push_back('\n');
    for (int64_t i = 0; i < numel; ++i)
        appendLittleEndian(out, data + i, sizeof(float));
    return out;
}

void writeNpy(const std::filesystem::path& path, const std::vector<int64_t>& dims, const float* data)
{
    writeFileAtomically(path, serializeNpy(dims, data));
}

std::string npyDimsText(const std::vector<int64_t>& dims)
{
    std::string s = "[";
    for (size_t i = 0; i < dims.size(); ++i) {
        if (i)
            s += ", ";
        s += std::to_string(dims[i]);
    }
    return s + "]";
}

} // namespace convscope
