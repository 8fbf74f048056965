// The .npy reader and writer: hand-made byte strings of every version, files numpy itself wrote, and a corpus
// of malformed files (tests/data/make_malformed.py) that must each fail with words naming the problem.
#include "compute/atomic_file.h"
#include "compute/error.h"
#include "compute/npy.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <fstream>

using namespace convscope;
using Catch::Matchers::Contains;

namespace {

std::string prefixed(int major, const std::string& header)
{
    std::string out = "\x93NUMPY";
    out.push_back(char(major));
    out.push_back(0);
    const size_t n = header.size();
    out.push_back(char(n & 0xff));
    out.push_back(char((n >> 8) & 0xff));
    if (major >= 2) {
        out.push_back(char((n >> 16) & 0xff));
        out.push_back(char((n >> 24) & 0xff));
    }
    return out + header;
}

template <typename T> std::string rawBytes(std::initializer_list<T> values)
{
    std::string s(values.size() * sizeof(T), '\0');
    std::memcpy(s.data(), std::data(values), s.size());
    return s;
}

std::string messageOf(const std::function<void()>& f)
{
    try {
        f();
    } catch (const InputError& e) {
        return e.what();
    }
    FAIL("expected an InputError");
    return {};
}

} // namespace

TEST_CASE("npy: versions 1.0, 2.0 and 3.0 of hand-made bytes parse to the same array", "[npy]")
{
    const std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\n";
    const std::string data = rawBytes<float>({ 1, 2, 3, 4, 5, 6.5f });
    for (int major : { 1, 2, 3 }) {
        CAPTURE(major);
        const NpyArray a = parseNpy(prefixed(major, header) + data, "hand.npy");
        CHECK(a.dims == std::vector<int64_t> { 2, 3 });
        CHECK(a.numel() == 6);
        CHECK(a.data == std::vector<float> { 1, 2, 3, 4, 5, 6.5f });
    }
}

TEST_CASE("npy: float64 is converted, scalars and one-element tuples parse", "[npy]")
{
    const NpyArray d = parseNpy(
        prefixed(1, "{'descr':'<f8','fortran_order':False,'shape':(3,)}") + rawBytes<double>({ 0.25, -1e10, 3.5 }),
        "f64");
    CHECK(d.dims == std::vector<int64_t> { 3 });
    CHECK(d.data == std::vector<float> { 0.25f, -1e10f, 3.5f });

    const NpyArray s = parseNpy(
        prefixed(1, "{\"shape\": (), \"fortran_order\": False, \"descr\": \"<f4\"}  \n") + rawBytes<float>({ 7 }),
        "scalar");
    CHECK(s.dims.empty());
    CHECK(s.numel() == 1);
    CHECK(s.data == std::vector<float> { 7 });

    // Python 2 era numpy wrote shapes as longs.
    const NpyArray l = parseNpy(
        prefixed(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1L, 2L), }") + rawBytes<float>({ 1, 2 }),
        "long");
    CHECK(l.dims == std::vector<int64_t> { 1, 2 });
}

TEST_CASE("npy: serializeNpy writes an aligned 1.0 header that parses back", "[npy]")
{
    const std::vector<float> values = { -1.5f, 0, 2, 1e-7f, 3, 4 };
    for (const std::vector<int64_t>& dims : { std::vector<int64_t> { 6 }, { 2, 3 }, { 1, 2, 1, 3 } }) {
        const std::string bytes = serializeNpy(dims, values.data());
        REQUIRE(bytes.compare(0, 8, std::string("\x93NUMPY\x01\x00", 8)) == 0);
        const size_t headerLength = size_t(uint8_t(bytes[8])) | size_t(uint8_t(bytes[9])) << 8;
        CHECK((10 + headerLength) % 64 == 0);
        CHECK(bytes[10 + headerLength - 1] == '\n');
        CHECK(bytes.size() == 10 + headerLength + 6 * sizeof(float));
        const NpyArray back = parseNpy(bytes, "round trip");
        CHECK(back.dims == dims);
        CHECK(back.data == values);
    }
    const float one = 1.0f;
    const NpyArray scalar = parseNpy(serializeNpy({}, &one), "scalar");
    CHECK(scalar.dims.empty());
    CHECK(scalar.data == std::vector<float> { 1.0f });
    // The header is the dict numpy writes, so numpy reads our files.
    CHECK_THAT(
        serializeNpy({ 3 }, values.data()), Contains("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }"));
}

TEST_CASE("npy: a header too long for 1.0 switches to 2.0", "[npy]")
{
    const std::vector<int64_t> dims(22000, 1); // "1, " 22000 times is more than 65535 bytes
    const float v = 2.0f;
    const std::string bytes = serializeNpy(dims, &v);
    CHECK(bytes[6] == 2);
    const size_t headerLength = size_t(uint8_t(bytes[8])) | size_t(uint8_t(bytes[9])) << 8
        | size_t(uint8_t(bytes[10])) << 16 | size_t(uint8_t(bytes[11])) << 24;
    CHECK(headerLength > 0xffff);
    CHECK((12 + headerLength) % 64 == 0);
    const NpyArray back = parseNpy(bytes, "long header");
    CHECK(back.dims.size() == 22000);
    CHECK(back.data == std::vector<float> { 2.0f });
}

TEST_CASE("npy: writeNpy and readNpy round trip through a file", "[npy]")
{
    test::TempDir dir;
    const std::vector<float> values = { 1, 2, 3, 4 };
    const auto path = dir.path / "w.npy";
    writeNpy(path, { 2, 2 }, values.data());
    const NpyArray a = readNpy(path);
    CHECK(a.dims == std::vector<int64_t> { 2, 2 });
    CHECK(a.data == values);
    // Only the target remains: the temporary file was renamed, not left behind.
    CHECK(std::distance(std::filesystem::directory_iterator(dir.path), std::filesystem::directory_iterator {}) == 1);
}

TEST_CASE("npy: files written by numpy itself are read", "[npy]")
{
    const auto dir = test::dataDir() / "npy";
    const NpyArray a = readNpy(dir / "f32_2x3.npy");
    CHECK(a.dims == std::vector<int64_t> { 2, 3 });
    CHECK(a.data == std::vector<float> { -1.0f, -0.5f, 0.0f, 0.5f, 1.0f, 1.5f });
    for (const char* name : { "f32_2x3_v2.npy", "f32_2x3_v3.npy" }) {
        CAPTURE(name);
        const NpyArray v = readNpy(dir / name);
        CHECK(v.dims == a.dims);
        CHECK(v.data == a.data);
    }
    const NpyArray d = readNpy(dir / "f64_vector.npy");
    CHECK(d.dims == std::vector<int64_t> { 4 });
    CHECK(d.data == std::vector<float> { 0.1f, -2.5f, 1e-3f, 3.0f });
    const NpyArray s = readNpy(dir / "f32_scalar.npy");
    CHECK(s.dims.empty());
    CHECK(s.data == std::vector<float> { 4.25f });
    const NpyArray e = readNpy(dir / "f32_empty.npy");
    CHECK(e.dims == std::vector<int64_t> { 0, 3 });
    CHECK(e.data.empty());
    const NpyArray n = readNpy(dir / "f32_nchw.npy");
    CHECK(n.dims == std::vector<int64_t> { 2, 3, 4, 5 });
    REQUIRE(n.data.size() == 120);
    CHECK(n.data[119] == 1.19f);
}

TEST_CASE("npy: every malformed file is refused with a message naming the file and the problem", "[npy]")
{
    const std::pair<const char*, const char*> corpus[] = {
        { "empty.npy", "not a .npy file" },
        { "bad_magic.npy", "not a .npy file" },
        { "text_file.npy", "not a .npy file" },
        { "truncated_version.npy", "truncated header" },
        { "truncated_length.npy", "truncated header" },
        { "truncated_length_v2.npy", "truncated header" },
        { "header_past_end.npy", "header length 1000 runs past the end of the file" },
        { "header_past_end_v3.npy", "header length 4294967280 runs past the end of the file" },
        { "version_4.npy", "unsupported .npy version 4.0" },
        { "big_endian.npy", "unsupported dtype '>f4'" },
        { "int32.npy", "unsupported dtype '<i4'" },
        { "float16.npy", "unsupported dtype '<f2'" },
        { "fortran_order.npy", "Fortran-ordered" },
        { "missing_shape.npy", "no 'shape' key" },
        { "missing_descr.npy", "no 'descr' key" },
        { "unknown_key.npy", "unknown key 'extra'" },
        { "duplicate_key.npy", "'descr' appears twice" },
        { "data_short.npy", "needs 24 data bytes but the file has 20 (truncated)" },
        { "data_long.npy", "needs 24 data bytes but the file has 28 (trailing bytes)" },
        { "data_missing.npy", "needs 24 data bytes but the file has 0" },
        { "count_overflow.npy", "overflows a 64-bit count" },
        { "dim_overflow.npy", "overflows a 64-bit count" },
        { "negative_dim.npy", "non-negative integers" },
        { "shape_not_tuple.npy", "trailing comma" },
        { "shape_list.npy", "written as a tuple" },
        { "not_a_dict.npy", "must be a dict" },
        { "unterminated_dict.npy", "malformed .npy header" },
        { "code_in_header.npy", "malformed .npy header" },
        { "structured_dtype.npy", "structured dtypes are not supported" },
        { "trailing_text.npy", "unexpected text after the header dict" },
        { "numpy_fortran.npy", "Fortran-ordered" },
        { "numpy_big_endian.npy", "unsupported dtype '>f4'" },
        { "numpy_int64.npy", "unsupported dtype '<i8'" },
    };
    const auto dir = test::dataDir() / "malformed";
    size_t checked = 0;
    for (const auto& [name, expected] : corpus) {
        const auto path = dir / name;
        if (std::string(name).rfind("numpy_", 0) == 0 && !std::filesystem::exists(path))
            continue; // written only where numpy was installed
        CAPTURE(name);
        REQUIRE(std::filesystem::exists(path));
        const std::string message = messageOf([&] { readNpy(path); });
        CHECK_THAT(message, Contains(name));
        CHECK_THAT(message, Contains(expected));
        ++checked;
    }
    // Every file in the folder is in the table, so a new case cannot be added without its expected words.
    size_t files = 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir))
        files += entry.path().extension() == ".npy";
    CHECK(checked == files);
}

TEST_CASE("npy: a missing file is an InputError naming it", "[npy]")
{
    const std::string message = messageOf([] { readNpy("/nonexistent/folder/w.npy"); });
    CHECK_THAT(message, Contains("cannot read /nonexistent/folder/w.npy"));
}

TEST_CASE("npy: serializeNpy refuses negative and overflowing shapes", "[npy]")
{
    const float v = 0;
    CHECK_THAT(messageOf([&] { serializeNpy({ -2 }, &v); }), Contains("negative"));
    CHECK_THAT(messageOf([&] { serializeNpy({ int64_t(1) << 40, int64_t(1) << 40 }, &v); }), Contains("overflows"));
}
