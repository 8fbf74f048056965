#include "compute/load_input.h"

#include "compute/checked_math.h"
#include "compute/error.h"
#include "compute/image_input.h"
#include "compute/npy.h"
#include "compute/random.h"
#include "compute/voxel_samples.h"

#include <algorithm>
#include <set>

namespace convscope {

namespace {

    std::string lowerExtension(const std::string& file)
    {
        std::string ext = std::filesystem::path(file).extension().string();
        std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return char(std::tolower(c)); });
        return ext;
    }

} // namespace

Tensor loadInput(const InputSpec& input, const std::filesystem::path& baseDir)
{
    const std::string& source = input.source;
    const Shape shape = input.shape();
    const std::string where = "input \"" + source + "\"";
    if (input.batch < 1 || input.channels < 1 || (!input.flat && (input.height < 1 || input.width < 1)))
        throw InputError(where + ": the input size " + shape.str() + " must be positive");
    checkedMul(shape.numel(), int64_t(sizeof(float)), where + ": input " + shape.str());

    const bool voxels = source.rfind("sample:", 0) == 0 && isVoxelSample(source.substr(7));
    if (input.depth > 0 && !input.flat && source.rfind("random", 0) != 0 && lowerExtension(source) != ".npy" && !voxels)
        throw InputError(where + ": the input is a volume " + shape.str()
            + "; give it \"random\", \"random:SEED\", a voxel sample (sample:voxels:sphere, :torus, :cube, :chair) "
              "or an .npy file of shape [N, C, D, H, W] or [C, D, H, W]");
    if (voxels) {
        if (input.flat || input.depth <= 0)
            throw InputError(
                where + ": a voxel sample is a volume; the input needs a \"depth\" (it is " + shape.str() + ")");
        return makeVoxelSample(source.substr(7), input.batch, input.channels, input.depth, input.height, input.width);
    }
    const bool image = !input.flat && input.dims.empty();
    if (source.rfind("sample:", 0) == 0) {
        if (!image)
            throw InputError(
                where + ": a sample picture needs an image input (channels, height, width), not " + shape.str());
        return makeSampleInput(source.substr(7), input.batch, input.channels, input.height, input.width);
    }
    if (source == "random" || source.rfind("random:", 0) == 0) {
        uint64_t seed = 1;
        if (source.size() > 7) {
            const std::string digits = source.substr(7);
            if (digits.size() > 19
                || !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
                throw InputError(where + ": expected \"random\" or \"random:SEED\" with a non-negative integer seed");
            seed = std::stoull(digits);
        }
        Tensor t(shape);
        Random rng(seed);
        for (int64_t i = 0; i < t.numel(); ++i)
            t.data()[i] = float(rng.uniform());
        return t;
    }

    const std::string ext = lowerExtension(source);
    static const std::set<std::string> imageExtensions
        = { ".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tga", ".pgm", ".ppm", ".pnm" }; // image_input.cpp's decoders
    const std::filesystem::path path = resolveAgainst(source, baseDir);
    if (imageExtensions.count(ext)) {
        if (!image)
            throw InputError(where + ": an image needs an image input (channels, height, width), not " + shape.str());
        return loadImageInput(path, input.batch, input.channels, input.height, input.width);
    }
    if (ext == ".npy") {
        NpyArray a = readNpy(path);
        const std::vector<int64_t>& d = a.dims;
        const bool volume = !input.flat && input.depth > 0;
        const std::string expected = !image ? npyDimsText(shape.dims())
            : volume ? npyDimsText({ input.batch, input.channels, input.depth, input.height, input.width })
                     : npyDimsText({ input.batch, input.channels, input.height, input.width });
        bool matches = false;
        int64_t repeat = 1;
        if (!image) {
            matches = d == shape.dims();
        } else if (volume && d.size() == 5) {
            matches = d == std::vector<int64_t> { input.batch, input.channels, input.depth, input.height, input.width };
        } else if (volume && d.size() == 4) {
            // One volume [C, D, H, W] is repeated over the batch.
            matches = d == std::vector<int64_t> { input.channels, input.depth, input.height, input.width };
            repeat = input.batch;
        } else if (volume) {
            matches = false;
        } else if (d.size() == 4) {
            matches = d == std::vector<int64_t> { input.batch, input.channels, input.height, input.width };
        } else if (d.size() == 3) {
            // One picture [C, H, W] is repeated over the batch, as an image file is.
            matches = d == std::vector<int64_t> { input.channels, input.height, input.width };
            repeat = input.batch;
        }
        if (!matches)
            throw InputError(where + ": the array has shape " + npyDimsText(d) + " but the network input is " + expected
                + (!image        ? ""
                        : volume ? " (or [C, D, H, W] for one volume repeated over the batch)"
                                 : " (or [C, H, W] for one picture repeated over the batch)"));
        Tensor t(shape);
        const size_t per = a.data.size();
        for (int64_t n = 0; n < repeat; ++n)
            std::copy(a.data.begin(), a.data.end(), t.data() + size_t(n) * per);
        return t;
    }
    throw InputError(where
        + ": unknown input source; use \"sample:digit\", \"sample:edges\", \"random\", "
          "\"random:SEED\", an image file (.png, .jpg, .bmp, ...) or an .npy file");
}

} // namespace convscope
