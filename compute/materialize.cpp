// One Materializer per layer with parameters: it knows the layer's PyTorch weight layout (ParamPlan) and fills it.
#include "compute/materialize.h"

#include "compute/checked_math.h"
#include "compute/error.h"
#include "compute/layer_kinds.h"
#include "compute/linear_geometry.h"
#include "compute/normalization.h"
#include "compute/npy.h"
#include "compute/random.h"

#include <algorithm>
#include <cmath>

namespace convscope {

namespace {

    // The 3x3 classic filters, row-major.
    bool classicFilter(const std::string& kind, float out[9])
    {
        static const std::pair<const char*, std::array<float, 9>> filters[] = {
            { "sobel_x", { -1, 0, 1, -2, 0, 2, -1, 0, 1 } },
            { "sobel_y", { -1, -2, -1, 0, 0, 0, 1, 2, 1 } },
            { "laplacian", { 0, 1, 0, 1, -4, 1, 0, 1, 0 } },
            { "gaussian_blur",
                { 1 / 16.f, 2 / 16.f, 1 / 16.f, 2 / 16.f, 4 / 16.f, 2 / 16.f, 1 / 16.f, 2 / 16.f, 1 / 16.f } },
            { "sharpen", { 0, -1, 0, -1, 5, -1, 0, -1, 0 } },
            { "box_blur", { 1 / 9.f, 1 / 9.f, 1 / 9.f, 1 / 9.f, 1 / 9.f, 1 / 9.f, 1 / 9.f, 1 / 9.f, 1 / 9.f } },
            { "identity", { 0, 0, 0, 0, 1, 0, 0, 0, 0 } },
        };
        for (const auto& [name, values] : filters) {
            if (kind == name) {
                std::copy(values.begin(), values.end(), out);
                return true;
            }
        }
        return false;
    }

    // What a parameterised layer needs, in PyTorch's terms.
    struct ParamPlan {
        std::vector<int64_t> weightDims; // as PyTorch stores the weight; empty when the layer has none
        Shape weightShape; // how the Tensor stores it
        int64_t biasSize = 0; // 0 when there is no bias
        int64_t fanIn = 0, fanOut = 0;
        bool convolution = false;
    };

    class Materializer {
    public:
        Materializer(Layer& layer, size_t index, const std::filesystem::path& baseDir)
            : m_layer(layer)
            , m_baseDir(baseDir)
            , m_where("layer " + std::to_string(index) + " (" + layer.name + ")")
        {
        }

        [[noreturn]] void fail(const std::string& message) const { throw InputError(m_where + ": " + message); }

        // A tensor of `dims` (stored as `shape`) read from an .npy file whose shape must match exactly.
        std::shared_ptr<const Tensor> fromFile(
            const std::string& key, const std::string& file, const std::vector<int64_t>& dims, const Shape& shape)
        {
            NpyArray a;
            try {
                a = readNpy(resolveAgainst(file, m_baseDir));
            } catch (const InputError& e) {
                fail("\"" + key + "\": " + e.what());
            }
            if (a.dims != dims)
                fail("\"" + key + "\": " + file + " has shape " + npyDimsText(a.dims) + " but "
                    + layerTypeName(m_layer.spec) + " needs " + npyDimsText(dims));
            Tensor t(shape);
            std::copy(a.data.begin(), a.data.end(), t.data());
            return std::make_shared<const Tensor>(std::move(t));
        }

        Tensor allocate(const Shape& shape, const std::string& what)
        {
            checkedProduct(
                { shape.n, shape.c, shape.d, shape.h, shape.w, int64_t(sizeof(float)) }, m_where + ": " + what);
            return Tensor(shape);
        }

        // An imported model's tensor, checked against the shape the layer needs.
        std::shared_ptr<const Tensor> embedded(
            const std::shared_ptr<const Tensor>& t, const char* key, const Shape& shape, const std::string& dims)
        {
            if (!m_layer.embedded || !t)
                fail(std::string("the imported model carries no ") + key);
            if (t->shape() != shape)
                fail(std::string("the imported ") + key + " has shape " + t->shape().str() + " but "
                    + layerTypeName(m_layer.spec) + " needs " + dims);
            return t;
        }

        void weightsAndBias(const ParamPlan& plan)
        {
            const InitSpec& init = m_layer.init;
            if (init.kind == "embedded") {
                const Layer::Embedded* e = m_layer.embedded.get();
                m_layer.weight
                    = embedded(e ? e->weight : nullptr, "weight", plan.weightShape, npyDimsText(plan.weightDims));
                if (plan.biasSize > 0)
                    m_layer.bias = embedded(e ? e->bias : nullptr, "bias", Shape::nchw(plan.biasSize, 1, 1, 1),
                        npyDimsText({ plan.biasSize }));
                return;
            }
            Tensor w = allocate(plan.weightShape, "weight " + npyDimsText(plan.weightDims));
            Tensor b;
            if (plan.biasSize > 0)
                b = Tensor::zeros(Shape::nchw(plan.biasSize, 1, 1, 1));
            Random rng(init.seed);
            const auto fillUniform = [&](Tensor& t, double bound) {
                for (int64_t i = 0; i < t.numel(); ++i)
                    t.data()[i] = float(rng.uniform(-bound, bound));
            };

            float filter[9];
            if (init.kind == "default") {
                // kaiming_uniform_(a=sqrt(5)) gives gain sqrt(1/3), so bound = sqrt(3) * gain / sqrt(fan_in)
                // = 1 / sqrt(fan_in); PyTorch draws the bias from the same bound.
                const double bound = plan.fanIn > 0 ? 1.0 / std::sqrt(double(plan.fanIn)) : 0.0;
                fillUniform(w, bound);
                if (!b.empty())
                    fillUniform(b, bound);
            } else if (init.kind == "uniform") {
                const double low = init.low.value_or(-1.0), high = init.high.value_or(1.0);
                for (int64_t i = 0; i < w.numel(); ++i)
                    w.data()[i] = float(rng.uniform(low, high));
                for (int64_t i = 0; i < b.numel(); ++i)
                    b.data()[i] = float(rng.uniform(low, high));
            } else if (init.kind == "he_uniform") {
                fillUniform(w, plan.fanIn > 0 ? std::sqrt(6.0 / double(plan.fanIn)) : 0.0);
            } else if (init.kind == "xavier_uniform") {
                const double fans = double(plan.fanIn) + double(plan.fanOut);
                fillUniform(w, fans > 0 ? std::sqrt(6.0 / fans) : 0.0);
            } else if (init.kind == "constant") {
                w.fill(float(init.value.value_or(0.0)));
            } else if (classicFilter(init.kind, filter)) {
                if (!plan.convolution)
                    fail("\"init\": kind \"" + init.kind + "\" is a 3x3 filter and applies only to convolutions");
                if (plan.weightDims.size() != 4)
                    fail("\"init\": kind \"" + init.kind + "\" is a 2-D 3x3 filter and does not apply to "
                        + layerTypeName(m_layer.spec));
                if (plan.weightDims[2] != 3 || plan.weightDims[3] != 3)
                    fail("\"init\": kind \"" + init.kind + "\" is a 3x3 filter but kernel_size is ["
                        + std::to_string(plan.weightDims[2]) + ", " + std::to_string(plan.weightDims[3]) + "]");
                // Dividing by the inputs per group makes a colour image filter like its grey version: the filter
                // sees the mean of the channels.
                const int64_t pairs = plan.weightDims[0] * plan.weightDims[1];
                const float scale = 1.0f / float(m_inPerGroup);
                for (int64_t p = 0; p < pairs; ++p)
                    for (int k = 0; k < 9; ++k)
                        w.data()[p * 9 + k] = filter[k] * scale;
            } else if (init.kind == "file") {
                m_layer.weight = fromFile("init.weight", init.weight_file, plan.weightDims, plan.weightShape);
                if (!init.bias_file.empty()) {
                    if (plan.biasSize == 0)
                        fail("\"init.bias\": a bias file is given but the layer has \"bias\": false");
                    m_layer.bias
                        = fromFile("init.bias", init.bias_file, { plan.biasSize }, Shape::nchw(plan.biasSize, 1, 1, 1));
                } else if (!b.empty()) {
                    m_layer.bias = std::make_shared<const Tensor>(std::move(b)); // no bias file: zero bias
                }
                return;
            } else {
                fail("\"init\": kind \"" + init.kind + "\" does not apply to " + layerTypeName(m_layer.spec));
            }
            m_layer.weight = std::make_shared<const Tensor>(std::move(w));
            if (!b.empty())
                m_layer.bias = std::make_shared<const Tensor>(std::move(b));
        }

        // Batch norm statistics: defaults or seeded values, then any explicit value from the file.
        void batchNorm(int64_t channels)
        {
            const InitSpec& init = m_layer.init;
            if (init.kind == "embedded") {
                const Layer::Embedded* e = m_layer.embedded.get();
                const Shape shape = Shape::nchw(channels, 1, 1, 1);
                const std::string dims = npyDimsText({ channels });
                m_layer.weight = embedded(e ? e->weight : nullptr, "weight", shape, dims);
                m_layer.bias = embedded(e ? e->bias : nullptr, "bias", shape, dims);
                m_layer.runningMean = embedded(e ? e->runningMean : nullptr, "running_mean", shape, dims);
                m_layer.runningVar = embedded(e ? e->runningVar : nullptr, "running_var", shape, dims);
                return;
            }
            if (init.kind != "default" && init.kind != "random")
                fail("\"init\": kind \"" + init.kind + "\" does not apply to " + layerTypeName(m_layer.spec)
                    + " (default or random)");
            const Shape shape = Shape::nchw(channels, 1, 1, 1);
            Tensor weight = Tensor::filled(shape, 1.0f), bias = Tensor::zeros(shape), mean = Tensor::zeros(shape),
                   var = Tensor::filled(shape, 1.0f);
            if (init.kind == "random") {
                // Statistics like a trained network's: scales near 1, small shifts, variances around 1.
                Random rng(init.seed);
                for (int64_t c = 0; c < channels; ++c) {
                    weight.data()[c] = float(rng.uniform(0.5, 1.5));
                    bias.data()[c] = float(rng.uniform(-0.5, 0.5));
                    mean.data()[c] = float(rng.uniform(-0.5, 0.5));
                    var.data()[c] = float(rng.uniform(0.5, 2.0));
                }
            }
            const std::pair<const char*, Tensor*> targets[]
                = { { "running_mean", &mean }, { "running_var", &var }, { "weight", &weight }, { "bias", &bias } };
            for (const auto& [key, tensor] : targets) {
                auto it = m_layer.explicitParams.find(key);
                if (it == m_layer.explicitParams.end())
                    continue;
                const ParamValue& p = it->second;
                const std::string k = key;
                if (p.kind == ParamValue::Kind::Scalar) {
                    tensor->fill(float(p.scalar));
                } else if (p.kind == ParamValue::Kind::List) {
                    if (int64_t(p.list.size()) != channels)
                        fail("\"" + k + "\" has " + std::to_string(p.list.size()) + " values but the layer has "
                            + std::to_string(channels) + " channels");
                    for (int64_t c = 0; c < channels; ++c)
                        tensor->data()[c] = float(p.list[size_t(c)]);
                } else {
                    auto t = fromFile(k, p.file, { channels }, shape);
                    std::copy(t->data(), t->data() + channels, tensor->data());
                }
            }
            for (int64_t c = 0; c < channels; ++c)
                if (!(var.data()[c] >= 0) || !std::isfinite(var.data()[c]))
                    fail("\"running_var\" must be non-negative, channel " + std::to_string(c) + " has "
                        + std::to_string(var.data()[c]));
            // Without affine PyTorch has no weight and bias; 1 and 0 keep every backend on one formula.
            const auto* bn2 = std::get_if<BatchNorm2d>(&m_layer.spec);
            const auto* bn3 = std::get_if<BatchNorm3d>(&m_layer.spec);
            if ((bn2 && !bn2->affine) || (bn3 && !bn3->affine)) {
                weight.fill(1.0f);
                bias.fill(0.0f);
            }
            m_layer.weight = std::make_shared<const Tensor>(std::move(weight));
            m_layer.bias = std::make_shared<const Tensor>(std::move(bias));
            m_layer.runningMean = std::make_shared<const Tensor>(std::move(mean));
            m_layer.runningVar = std::make_shared<const Tensor>(std::move(var));
        }

        // layer_norm, group_norm, instance_norm (compute/normalization.h): weight and bias of PyTorch's dims, stored
        // flat; 1 and 0 where PyTorch has none (affine false, bias false), so every backend runs one formula.
        void normParameters(const std::vector<int64_t>& dims)
        {
            int64_t count = 1;
            for (const int64_t d : dims)
                count = checkedMul(count, d, m_where + ": parameters");
            const Shape shape = Shape::nchw(count, 1, 1, 1);
            const std::string text = npyDimsText(dims);
            const InitSpec& init = m_layer.init;
            const bool hasWeight = normHasWeight(m_layer.spec), hasBias = normHasBias(m_layer.spec);
            Tensor w = Tensor::filled(shape, 1.0f), b = Tensor::zeros(shape);
            if (hasWeight && init.kind == "embedded") {
                const Layer::Embedded* e = m_layer.embedded.get();
                m_layer.weight = embedded(e ? e->weight : nullptr, "weight", shape, text);
                m_layer.bias = hasBias ? embedded(e ? e->bias : nullptr, "bias", shape, text)
                                       : std::make_shared<const Tensor>(std::move(b));
                return;
            }
            if (hasWeight && init.kind == "uniform") {
                Random rng(init.seed);
                const double low = init.low.value_or(-1.0), high = init.high.value_or(1.0);
                for (int64_t i = 0; i < count; ++i)
                    w.data()[i] = float(rng.uniform(low, high));
                if (hasBias)
                    for (int64_t i = 0; i < count; ++i)
                        b.data()[i] = float(rng.uniform(low, high));
            } else if (hasWeight && init.kind == "constant") {
                w.fill(float(init.value.value_or(1.0)));
            } else if (hasWeight && init.kind == "file") {
                m_layer.weight = fromFile("init.weight", init.weight_file, dims, shape);
                m_layer.bias = hasBias && !init.bias_file.empty() ? fromFile("init.bias", init.bias_file, dims, shape)
                                                                  : std::make_shared<const Tensor>(std::move(b));
                return;
            } else if (hasWeight && init.kind != "default") {
                fail("\"init\": kind \"" + init.kind + "\" does not apply to " + layerTypeName(m_layer.spec)
                    + " (default, constant, uniform, file)");
            }
            m_layer.weight = std::make_shared<const Tensor>(std::move(w));
            m_layer.bias = std::make_shared<const Tensor>(std::move(b));
        }

        void run(const LayerShape& shape)
        {
            const int64_t cin = shape.in.c;
            std::visit(
                [&](const auto& l) {
                    using T = std::decay_t<decltype(l)>;
                    ParamPlan plan;
                    if constexpr (std::is_same_v<T, Conv2d>) {
                        const int64_t kh = l.kernel_size[0], kw = l.kernel_size[1], g = l.groups;
                        m_inPerGroup = cin / g;
                        plan.weightDims = { l.out_channels, cin / g, kh, kw };
                        plan.weightShape = Shape::nchw(l.out_channels, cin / g, kh, kw);
                        plan.fanIn = checkedProduct({ cin / g, kh, kw }, m_where + ": fan_in");
                        plan.fanOut = checkedProduct({ l.out_channels, kh, kw }, m_where + ": fan_out");
                        plan.biasSize = l.bias ? l.out_channels : 0;
                        plan.convolution = true;
                        weightsAndBias(plan);
                    } else if constexpr (std::is_same_v<T, ConvTranspose2d>) {
                        // PyTorch computes the fans from the weight [C_in, C_out/g, kh, kw] as if it were a
                        // convolution's, so fan_in is C_out/g * kh * kw here.
                        const int64_t kh = l.kernel_size[0], kw = l.kernel_size[1], g = l.groups;
                        m_inPerGroup = cin / g;
                        plan.weightDims = { cin, l.out_channels / g, kh, kw };
                        plan.weightShape = Shape::nchw(cin, l.out_channels / g, kh, kw);
                        plan.fanIn = checkedProduct({ l.out_channels / g, kh, kw }, m_where + ": fan_in");
                        plan.fanOut = checkedProduct({ cin, kh, kw }, m_where + ": fan_out");
                        plan.biasSize = l.bias ? l.out_channels : 0;
                        plan.convolution = true;
                        weightsAndBias(plan);
                    } else if constexpr (std::is_same_v<T, Linear>) {
                        const int64_t features = linearRows(shape.in).inFeatures; // the last axis, any rank
                        plan.weightDims = { l.out_features, features };
                        plan.weightShape = Shape::nchw(l.out_features, features, 1, 1);
                        plan.fanIn = features;
                        plan.fanOut = l.out_features;
                        plan.biasSize = l.bias ? l.out_features : 0;
                        weightsAndBias(plan);
                    } else if constexpr (std::is_same_v<T, Conv3d>) {
                        const int64_t kd = l.kernel_size[0], kh = l.kernel_size[1], kw = l.kernel_size[2], g = l.groups;
                        m_inPerGroup = cin / g;
                        plan.weightDims = { l.out_channels, cin / g, kd, kh, kw };
                        plan.weightShape = Shape::ncdhw(l.out_channels, cin / g, kd, kh, kw);
                        plan.fanIn = checkedProduct({ cin / g, kd, kh, kw }, m_where + ": fan_in");
                        plan.fanOut = checkedProduct({ l.out_channels, kd, kh, kw }, m_where + ": fan_out");
                        plan.biasSize = l.bias ? l.out_channels : 0;
                        plan.convolution = true;
                        weightsAndBias(plan);
                    } else if constexpr (std::is_same_v<T, ConvTranspose3d>) {
                        // As conv_transpose2d: PyTorch takes the fans from the weight [C_in, C_out/g, kd, kh, kw].
                        const int64_t kd = l.kernel_size[0], kh = l.kernel_size[1], kw = l.kernel_size[2], g = l.groups;
                        m_inPerGroup = cin / g;
                        plan.weightDims = { cin, l.out_channels / g, kd, kh, kw };
                        plan.weightShape = Shape::ncdhw(cin, l.out_channels / g, kd, kh, kw);
                        plan.fanIn = checkedProduct({ l.out_channels / g, kd, kh, kw }, m_where + ": fan_in");
                        plan.fanOut = checkedProduct({ cin, kd, kh, kw }, m_where + ": fan_out");
                        plan.biasSize = l.bias ? l.out_channels : 0;
                        plan.convolution = true;
                        weightsAndBias(plan);
                    } else if constexpr (std::is_same_v<T, BatchNorm2d> || std::is_same_v<T, BatchNorm3d>) {
                        batchNorm(cin);
                    } else if constexpr (std::is_same_v<T, PReLU>) {
                        // torch.nn.PReLU(num_parameters, init=0.25): weight [num_parameters], no bias. "default"
                        // is PyTorch's constant 0.25, not a kaiming draw.
                        plan.weightDims = { l.num_parameters };
                        plan.weightShape = Shape::nchw(l.num_parameters, 1, 1, 1);
                        if (m_layer.init.kind == "default") {
                            m_layer.weight = std::make_shared<const Tensor>(Tensor::filled(plan.weightShape, 0.25f));
                        } else if (m_layer.init.kind == "he_uniform" || m_layer.init.kind == "xavier_uniform") {
                            fail("\"init\": kind \"" + m_layer.init.kind
                                + "\" does not apply to prelu (default, constant, uniform, file)");
                        } else {
                            weightsAndBias(plan);
                        }
                    } else if constexpr (isNormKind<T>) {
                        normParameters(normParameterDims(l, shape.in));
                    } else if constexpr (std::is_same_v<T, Binary>) {
                        // The constant operand, as a flat tensor every backend reads by the layer's plan (not a
                        // parameter: nothing trains it, as a tensor PyTorch holds outside the parameters).
                        if (!l.constant.empty()) {
                            Tensor c(Shape::features(1, int64_t(l.constant.size())));
                            std::copy(l.constant.begin(), l.constant.end(), c.data());
                            m_layer.weight = std::make_shared<const Tensor>(std::move(c));
                        }
                    } else if constexpr (std::is_same_v<T, Matmul>) {
                        if (!l.constant.empty()) { // as binary's: the constant operand, read by the layer's plan
                            Tensor c(Shape::features(1, int64_t(l.constant.size())));
                            std::copy(l.constant.begin(), l.constant.end(), c.data());
                            m_layer.weight = std::make_shared<const Tensor>(std::move(c));
                        }
                    } else if constexpr ((layerKindOf<T>().needs & (kNeedsWeights | kNeedsStatistics)) == 0) {
                        // no parameters to make
                    } else {
                        static_assert(dependent_false<T>, "materialize: a kind with parameters needs its branch here");
                    }
                },
                m_layer.spec);
        }

    private:
        Layer& m_layer;
        std::filesystem::path m_baseDir;
        std::string m_where;
        int64_t m_inPerGroup = 1;
    };

} // namespace

void materializeParameters(Network& net, const ShapeReport& shapes)
{
    for (size_t i = 0; i < net.layers.size(); ++i) {
        Layer& layer = net.layers[i];
        layer.weight.reset();
        layer.bias.reset();
        layer.runningMean.reset();
        layer.runningVar.reset();
        if (i >= shapes.layers.size() || !shapes.layers[i].ok)
            continue;
        Materializer(layer, i, net.baseDir).run(shapes.layers[i]);
    }
}

} // namespace convscope
