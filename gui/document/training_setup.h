// What a training run in the window trains on (the Train page, issue 33): the network, its input and the target the
// loss compares the output with. For a classifier that ships a class-ordered test set — LeNet-5's
// digits_test_0to9.npy (the first test digit of each class, 0 to 9 in order), the colour CNN's
// colour_shapes_test.npy (one test picture per class, in class order) — the target proposes itself: item i is class i.
#pragma once

#include "compute/network.h"
#include "compute/tensor.h"
#include "compute/training/training.h"

#include <QString>

#include <filesystem>
#include <memory>
#include <optional>

namespace convscope::gui {

// A classifier's class-ordered set: an .npy of the network's (its input source, or the first .npy its description
// names that lies beside it) whose items fit the network's input and number as many as its labels. The trained
// examples' files say their items are one per class in class order; this is how a file says so.
struct ClassOrderedSet {
    std::string source; // as the network names it (relative to its folder)
    std::filesystem::path path;
    int64_t items = 0;
};
std::optional<ClassOrderedSet> classOrderedSet(const Network& net);

enum class TargetKind {
    ClassOrdered, // the class-ordered set as input, item i → class i (cross-entropy)
    ClassForAll, // every item of the network's input → one class (cross-entropy)
    ValueForAll, // every output value → one number (mse, bce)
    NpyFile, // a target .npy: class indices [N] (ce) or the output's shape (mse, bce)
};

struct TargetChoice {
    TargetKind kind = TargetKind::ClassForAll;
    int classIndex = 0;
    double value = 0;
    QString file;
    bool logits = true; // ce and bce take logits: a final softmax is left out of what trains
};

struct TrainingData {
    Network network; // what trains: the input set to the class-ordered set, a final softmax left out
    std::shared_ptr<const Tensor> input; // null: the network's own input (loaded on the worker)
    std::shared_ptr<const Tensor> target;
    QString description; // for the page: what the target is, what was left out
};

// Throws InputError naming what does not fit (a target whose shape does not fit the loss, a class index out of range,
// a network whose shapes do not infer, no class-ordered set for ClassOrdered).
TrainingData trainingData(const Network& net, LossKind loss, const TargetChoice& choice);

} // namespace convscope::gui
