#include "gui/document/training_setup.h"

#include "compute/error.h"
#include "compute/npy.h"
#include "compute/shape_inference.h"

#include <QCoreApplication>
#include <QStringList>

#include <algorithm>
#include <cstring>
#include <regex>

namespace convscope::gui {

namespace {
    QString setupText(const char* text) { return QCoreApplication::translate("TrainingSetup", text); }

    // The set `source` names when it is an .npy beside the network whose items fit the input, one per label.
    std::optional<ClassOrderedSet> classOrderedAt(const Network& net, const std::string& source)
    {
        const std::filesystem::path path = resolveAgainst(source, net.baseDir);
        std::error_code ec;
        if (!std::filesystem::is_regular_file(path, ec))
            return std::nullopt;
        NpyArray a;
        try {
            a = readNpy(path);
        } catch (const std::exception&) {
            return std::nullopt;
        }
        const InputSpec& in = net.input;
        if (in.flat || in.depth > 0 || a.dims.size() != 4 || a.dims[0] != int64_t(net.labels.size())
            || a.dims[1] != in.channels || a.dims[2] != in.height || a.dims[3] != in.width)
            return std::nullopt;
        return ClassOrderedSet { source, path, a.dims[0] };
    }
} // namespace

std::optional<ClassOrderedSet> classOrderedSet(const Network& net)
{
    if (net.labels.size() < 2)
        return std::nullopt;
    const std::string& own = net.input.source;
    if (own.size() > 4 && own.compare(own.size() - 4, 4, ".npy") == 0)
        if (auto set = classOrderedAt(net, own))
            return set;
    // The first .npy the description names that fits (the colour CNN's reads a photograph and names its test set).
    static const std::regex npyName(R"([A-Za-z0-9_][A-Za-z0-9_.\-/]*\.npy)");
    for (auto it = std::sregex_iterator(net.description.begin(), net.description.end(), npyName);
         it != std::sregex_iterator(); ++it)
        if (auto set = classOrderedAt(net, it->str()))
            return set;
    return std::nullopt;
}

TrainingData trainingData(const Network& source, LossKind loss, const TargetChoice& choice)
{
    TrainingData d;
    d.network = source;
    Network& net = d.network;
    QStringList notes;
    if (choice.kind == TargetKind::ClassOrdered) {
        const std::optional<ClassOrderedSet> set = classOrderedSet(source);
        if (!set)
            throw InputError(source.name + " has no class-ordered set (an .npy with one item per label)");
        if (loss != LossKind::CrossEntropy)
            throw InputError("the class-ordered set's targets are class indices: choose the cross-entropy loss");
        net.input.source = set->source;
        net.input.batch = set->items;
        notes << setupText("%1: %2 items, one of each class in class order; targets 0 … %3")
                     .arg(QString::fromStdString(set->source))
                     .arg(set->items)
                     .arg(set->items - 1);
    }
    // PyTorch's cross-entropy and BCE-with-logits take logits: a final softmax (a classifier file's probabilities)
    // is left out of what trains, as tools/make_training_references.py leaves it out of the LeNet-5 case.
    if (choice.logits && loss != LossKind::MSE && !net.layers.empty()
        && std::holds_alternative<Softmax>(net.layers.back().spec)) {
        notes << setupText("the loss on the logits (the final softmax %1 left out)")
                     .arg(QString::fromStdString(net.layers.back().name));
        net.layers.pop_back();
    }
    if (net.layers.empty())
        throw InputError(source.name + " has no layers: nothing to train");
    const ShapeReport shapes = inferShapes(net);
    if (!shapes.ok())
        throw InputError(net.name + ": " + shapes.firstError());
    const Shape& out = shapes.layers.back().out;

    std::shared_ptr<Tensor> target;
    switch (choice.kind) {
    case TargetKind::ClassOrdered:
    case TargetKind::ClassForAll: {
        if (loss != LossKind::CrossEntropy)
            throw InputError("a class target needs the cross-entropy loss (mse and bce take a target of the output's "
                             "shape)");
        checkLossTarget(loss, out, { out.n });
        target = std::make_shared<Tensor>(Shape::features(out.n, 1));
        for (int64_t i = 0; i < out.n; ++i)
            target->data()[i] = float(choice.kind == TargetKind::ClassOrdered ? i : choice.classIndex);
        checkClassIndices(out, *target);
        if (choice.kind == TargetKind::ClassForAll) {
            const QString name = size_t(choice.classIndex) < net.labels.size()
                ? QString::fromStdString(net.labels[size_t(choice.classIndex)])
                : QString::number(choice.classIndex);
            notes.prepend(setupText("every item of the input is class %1").arg(name));
        }
        break;
    }
    case TargetKind::ValueForAll:
        if (loss == LossKind::CrossEntropy)
            throw InputError("cross-entropy takes class indices: choose a class, or the mse or bce loss");
        if (loss == LossKind::BCEWithLogits && (choice.value < 0 || choice.value > 1))
            throw InputError("bce's target is a probability: " + std::to_string(choice.value) + " is not in [0, 1]");
        target = std::make_shared<Tensor>(out);
        std::fill(target->data(), target->data() + target->numel(), float(choice.value));
        notes.prepend(setupText("every output value's target is %1").arg(choice.value));
        break;
    case TargetKind::NpyFile: {
        if (choice.file.isEmpty())
            throw InputError("no target .npy chosen");
        const NpyArray a = readNpy(choice.file.toStdString());
        checkLossTarget(loss, out, a.dims);
        target = std::make_shared<Tensor>(loss == LossKind::CrossEntropy ? Shape::features(out.n, 1) : out);
        std::memcpy(target->data(), a.data.data(), a.data.size() * sizeof(float));
        if (loss == LossKind::CrossEntropy)
            checkClassIndices(out, *target);
        notes.prepend(setupText("target %1").arg(choice.file));
        break;
    }
    }
    d.target = std::move(target);
    d.description = notes.join(QStringLiteral("; "));
    return d;
}

} // namespace convscope::gui
