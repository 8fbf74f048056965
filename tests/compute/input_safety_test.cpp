// What ConvScope reads from files other people send: it never runs any of it, paths in a network file resolve
// next to that file, nothing it reads can make it allocate past the memory budget, and every input a fuzzer
// ever crashed the readers with (tests/data/fuzz/) now gives a clean InputError or a valid result.
#include "compute/atomic_file.h"
#include "compute/error.h"
#include "compute/image_input.h"
#include "compute/load_input.h"
#include "compute/materialize.h"
#include "compute/memory_budget.h"
#include "compute/network.h"
#include "compute/network_json.h"
#include "compute/npy.h"
#include "compute/shape_inference.h"

#include "tests/test_support.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

using namespace convscope;
namespace fs = std::filesystem;

namespace {

void writeText(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

std::string npyWithHeader(const std::string& dict)
{
    std::string header = dict;
    while ((10 + header.size() + 1) % 64)
        header += ' ';
    header += '\n';
    std::string out = "\x93NUMPY";
    out += '\x01';
    out += '\x00';
    out += char(header.size() & 0xff);
    out += char(header.size() >> 8);
    return out + header;
}

// Restores the process-wide budget however a test ends.
struct BudgetGuard {
    ~BudgetGuard() { setHostMemoryBudget(0); }
};

} // namespace

TEST_CASE("an .npy header that is Python code is refused as data and never run", "[input][security]")
{
    test::TempDir dir;
    const fs::path marker = dir.path / "pwned";
    const std::string payloads[] = {
        "{'descr': '<f4', 'fortran_order': False, 'shape': __import__('os').system('touch " + marker.string() + "'), }",
        "{'descr': __import__('os').system('touch " + marker.string() + "'), 'fortran_order': False, 'shape': (1,), }",
        "{'descr': '<f4', 'fortran_order': eval(\"open('" + marker.string() + "', 'w')\"), 'shape': (1,), }",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), '__class__': 'os.system', }",
    };
    for (const auto& p : payloads) {
        INFO(p);
        const fs::path file = dir.path / "evil.npy";
        writeText(file, npyWithHeader(p) + std::string(4, '\0'));
        CHECK_THROWS_AS(readNpy(file), InputError);
    }
    CHECK_FALSE(fs::exists(marker));
}

TEST_CASE("paths in a network file resolve next to the file, whatever the working folder", "[input][security]")
{
    test::TempDir dir;
    fs::create_directories(dir.path / "net" / "weights");
    const float w[6] = { 1, 2, 3, 4, 5, 6 };
    writeNpy(dir.path / "net" / "weights" / "fc.npy", { 2, 3 }, w);
    writeText(dir.path / "net" / "n.json", R"({ "format": "convscope-network", "version": 1,
      "input": { "batch": 1, "features": 3, "source": "random:1" },
      "layers": [ { "type": "linear", "out_features": 2, "bias": false, "init": { "weight": "weights/fc.npy" } } ] })");
    // A decoy with the same relative path under the working folder must not be the one read.
    fs::create_directories(dir.path / "cwd" / "weights");
    const float decoy[6] = { 9, 9, 9, 9, 9, 9 };
    writeNpy(dir.path / "cwd" / "weights" / "fc.npy", { 2, 3 }, decoy);
    const fs::path before = fs::current_path();
    fs::current_path(dir.path / "cwd");
    try {
        Network net = loadNetwork(fs::path("..") / "net" / "n.json");
        const ShapeReport shapes = inferShapes(net);
        REQUIRE(shapes.ok());
        materializeParameters(net, shapes);
        REQUIRE(net.layers[0].weight);
        CHECK(net.layers[0].weight->data()[0] == 1.0f);
        CHECK(net.layers[0].weight->data()[5] == 6.0f);
    } catch (...) {
        fs::current_path(before);
        throw;
    }
    fs::current_path(before);
}

TEST_CASE("a network file cannot make ConvScope read a device, a pipe or a folder", "[input][security]")
{
    test::TempDir dir;
    for (const std::string source : { "/dev/zero", "/dev/urandom", "/dev/stdin" }) {
        INFO(source);
        InputSpec in;
        in.batch = 1;
        in.channels = 1;
        in.height = 4;
        in.width = 4;
        in.source = source + std::string(".npy"); // even when named like data: no such file
        CHECK_THROWS_AS(loadInput(in, dir.path), InputError);
    }
    // The device itself, through a symlink named like an .npy file: refused at once, never read until memory runs out.
    fs::create_symlink("/dev/zero", dir.path / "zero.npy");
    CHECK_THROWS_WITH(readNpy(dir.path / "zero.npy"), Catch::Contains("not a regular file"));
    REQUIRE(mkfifo((dir.path / "fifo.npy").c_str(), 0600) == 0);
    CHECK_THROWS_WITH(readNpy(dir.path / "fifo.npy"), Catch::Contains("not a regular file"));
    CHECK_THROWS_WITH(readNpy(dir.path), Catch::Contains("folder"));
}

TEST_CASE("the memory budget is a setting and every refusal says how much was needed", "[input][budget]")
{
    BudgetGuard guard;
    CHECK(parseMemorySize("8G", "x") == int64_t(8) << 30);
    CHECK(parseMemorySize("512MiB", "x") == int64_t(512) << 20);
    CHECK(parseMemorySize("1.5GiB", "x") == int64_t(3) << 29);
    CHECK(parseMemorySize("4096", "x") == 4096);
    CHECK(parseMemorySize("50%", "x") == physicalMemory() / 2);
    for (const char* bad : { "", "-1G", "G", "12 parsecs", "200%", "0", "nan", "1e30T" })
        CHECK_THROWS_AS(parseMemorySize(bad, "--memory-budget"), InputError);

    setHostMemoryBudget(0);
    CHECK(hostMemoryBudget() > 0);
    CHECK(hostMemoryBudget() <= physicalMemory());

    setHostMemoryBudget(int64_t(1) << 20);
    CHECK(hostMemoryBudget() == int64_t(1) << 20);
    CHECK_NOTHROW(Tensor(Shape::nchw(1, 1, 256, 256))); // 256 KiB
    CHECK_THROWS_WITH(Tensor(Shape::nchw(1, 64, 256, 256)),
        Catch::Contains("would need 16.0 MiB") && Catch::Contains("memory budget is 1.0 MiB"));
    // A shape that overflows is an InputError before the budget is even asked.
    CHECK_THROWS_WITH(Tensor(Shape::nchw(int64_t(1) << 40, int64_t(1) << 40, 1 << 20, 1)), Catch::Contains("overflow"));

    // An image whose header claims a huge picture is refused before stb allocates for it.
    const std::string ppm = "P6\n16000 16000\n255\n" + std::string(64, '\0');
    CHECK_THROWS_WITH(decodeImageInput(ppm, "big.ppm", 1, 3, 8, 8), Catch::Contains("would need"));
    // A network input beyond the budget is refused while loading it, with the size.
    InputSpec in;
    in.batch = 64;
    in.channels = 3;
    in.height = 512;
    in.width = 512;
    in.source = "random:1";
    CHECK_THROWS_WITH(loadInput(in, {}), Catch::Contains("would need 192.0 MiB"));
    // A file larger than the budget is not read.
    test::TempDir dir;
    writeText(dir.path / "big.npy", std::string(2 << 20, 'x'));
    CHECK_THROWS_WITH(readNpy(dir.path / "big.npy"), Catch::Contains("would need 2.0 MiB"));
}

TEST_CASE("every input a fuzzer crashed a reader with is now refused cleanly", "[input][fuzz]")
{
    const fs::path root = test::dataDir() / "fuzz";
    int cases = 0;
    for (const char* kind : { "npy", "network", "image" }) {
        if (!fs::exists(root / kind))
            continue;
        for (const auto& entry : fs::directory_iterator(root / kind)) {
            INFO(entry.path().string());
            std::ifstream f(entry.path(), std::ios::binary);
            const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
            ++cases;
            try {
                if (std::string(kind) == "npy") {
                    (void)parseNpy(bytes, "fuzz case");
                } else if (std::string(kind) == "network") {
                    const Network net = parseNetwork(bytes, "fuzz case", "/nonexistent");
                    (void)inferShapes(net);
                } else if (!bytes.empty()) {
                    (void)decodeImageInput(bytes.substr(1), "fuzz case", 1, 3, 9, 7);
                }
            } catch (const InputError&) {
            }
        }
    }
    CHECK(cases > 0);
}

TEST_CASE("a PNG whose first data chunk is empty decodes as the same picture without it", "[input][fuzz]")
{
    // stb would memcpy to a null buffer on the empty chunk (undefined behaviour, found by the image fuzzer);
    // the chunk carries no data, so the repaired file must give exactly the picture the file describes.
    const fs::path png = test::dataDir() / "images" / "empty_first_idat.png";
    const std::string withEmpty = readFile(png, png.string());
    const size_t chunk = withEmpty.find("IDAT") - 4; // length, type, CRC: 12 bytes, no data
    REQUIRE(withEmpty.compare(chunk, 4, std::string(4, '\0')) == 0);
    const std::string without = std::string(withEmpty).erase(chunk, 12);

    const Tensor a = decodeImageInput(withEmpty, "empty chunk", 1, 1, 4, 5);
    const Tensor b = decodeImageInput(without, "no empty chunk", 1, 1, 4, 5);
    REQUIRE(a.numel() == 20);
    for (int64_t i = 0; i < a.numel(); ++i)
        CHECK(a.data()[i] == b.data()[i]);
    // and the picture is not blank: the test compares real pixels
    CHECK(*std::max_element(a.data(), a.data() + a.numel()) > *std::min_element(a.data(), a.data() + a.numel()));
}
