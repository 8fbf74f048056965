// Issue 31: outputs with meaning — class names carried by a network (the "labels" list of the JSON, a labels file
// beside an ONNX model) and a classifier's output read as its top-5 classes.
#include "gui_helpers.h"

#include "compute/error.h"
#include "compute/network_json.h"
#include "gui/document/class_prediction.h"
#include "gui/pages/feature_map_panel.h"
#include "gui/pages/run_panel.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

#include <QFile>
#include <QTemporaryDir>

using namespace convscope;
using namespace convscope::gui;
using namespace convscope::test;

TEST_CASE("a network file carries class names through load and save", "[gui][labels]")
{
    const std::string body = R"({ "format": "convscope-network", "version": 1, "name": "n", "labels": ["cat", "dog"],
        "input": { "batch": 1, "features": 3 }, "layers": [ { "type": "linear", "out_features": 2 } ] })";
    const Network net = parseNetwork(body, "n.json", {});
    CHECK(net.labels == std::vector<std::string> { "cat", "dog" });
    CHECK(serializeNetwork(net).find(R"("labels": ["cat","dog"])") != std::string::npos);
    CHECK(parseNetwork(serializeNetwork(net), "again", {}).sameDescription(net));
    CHECK_THROWS_WITH(parseNetwork(R"({ "format": "convscope-network", "labels": [1], "input": { "batch": 1,
        "features": 3 }, "layers": [] })",
                          "bad.json", {}),
        Catch::Contains("\"labels\"[0] must be a string"));

    // The bundled trained classifiers name theirs.
    CHECK(loadNetwork(examplesDir() / "lenet5_trained.json").labels.size() == 10);
    CHECK(loadNetwork(examplesDir() / "colour_cnn.json").labels.at(8) == "blue triangle");
}

TEST_CASE("topClasses reads probabilities as they are and logits through a softmax", "[gui][labels]")
{
    Tensor p(Shape::features(1, 4));
    const float probs[] = { 0.1f, 0.6f, 0.2f, 0.1f };
    std::copy(probs, probs + 4, p.data());
    const auto top = topClasses(p, 0, { "a", "b", "c", "d" }, 2);
    REQUIRE(top.size() == 2);
    CHECK(top[0].label == "b");
    CHECK(top[0].probability == Approx(0.6));
    CHECK(top[1].index == 2);
    Tensor logits(Shape::features(1, 3));
    const float l[] = { 0.f, std::log(3.f), 0.f };
    std::copy(l, l + 3, logits.data());
    const auto s = topClasses(logits, 0, {});
    REQUIRE(s.size() == 3);
    CHECK(s[0].index == 1);
    CHECK(s[0].probability == Approx(0.6));
    CHECK(s[0].label.empty());
}

TEST_CASE("the trained LeNet-5 names the digit it sees, top-5 with probabilities", "[gui][labels]")
{
    auto w = makeWindow();
    w->runPanel()->setLiveEnabled(false);
    REQUIRE(w->project()->openFile(QString::fromStdString((examplesDir() / "lenet5_trained.json").string())));
    REQUIRE(w->runPanel()->setSelections({ { "cpu", "im2col_gemm" } }));
    w->runPanel()->setWarmupRepeat(0, 1);
    const int last = int(w->document()->network().layers.size()) - 1;
    w->networkPanel()->setCurrentLayer(last);
    RunOutcomePtr o = waitForRun(*w, w->triggerRun());
    REQUIRE(o);
    const QString text = w->featureMaps()->predictionText();
    INFO(text.toStdString());
    CHECK(text.startsWith(QStringLiteral("Prediction, item 0: <b>0 ")));
    CHECK(text.count(QStringLiteral(" %")) == 5);
    // The ten test digits, 0 to 9 in order: (nearly) all named right.
    const Tensor& out = *o->result.selections[0].layers[size_t(last)].output;
    int right = 0;
    for (int i = 0; i < 10; ++i)
        right += topClasses(out, i, o->network.labels).at(0).index == i ? 1 : 0;
    CHECK(right >= 9);
    // An inner layer is no classifier.
    w->networkPanel()->setCurrentLayer(0);
    CHECK(w->featureMaps()->predictionText().isEmpty());
}

TEST_CASE("an ONNX model takes its class names from a labels file beside it", "[gui][labels]")
{
    QTemporaryDir dir;
    QFile f(dir.filePath(QStringLiteral("model.labels.txt")));
    REQUIRE(f.open(QIODevice::WriteOnly));
    f.write("tench\ngoldfish\n\nshark\n");
    f.close();
    std::vector<std::string> labels;
    CHECK(ProjectController::readLabelsBeside(dir.filePath(QStringLiteral("model.onnx")), &labels)
        == QStringLiteral("model.labels.txt"));
    CHECK(labels == std::vector<std::string> { "tench", "goldfish", "shark" });
    CHECK(ProjectController::readLabelsBeside(QStringLiteral("/nonexistent/m.onnx"), &labels).isEmpty());
}
