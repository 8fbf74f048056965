// ONNX in the window: File ▸ Open and drag and drop take a model (openAny), it opens as an unsaved network whose
// Save writes JSON with the weights as .npy beside it, and File ▸ Export ▸ ONNX writes a model that opens again to
// the same layers. A broken model leaves the network as it was.
#include "gui_helpers.h"

#include "compute/network_json.h"
#include "compute/onnx_model.h"
#include "gui/app/export_controller.h"
#include "tests/test_support.h"

#include <fstream>
#include <iostream>

using namespace convscope;
using namespace convscope::test;

TEST_CASE("an ONNX model opens, saves as JSON with its weights, and exports again", "[gui][onnx]")
{
    if (!onnxSupported()) {
        std::cout << "SKIPPED: " << onnxUnsupportedReason() << std::endl;
        return;
    }
    TempDir dir;
    const Network lenet = loadNetwork(examplesDir() / "lenet5.json");
    const auto model = dir.path / "lenet5.onnx";
    exportOnnxModel(lenet, model);

    auto w = makeWindow();
    REQUIRE(w->openAny(QString::fromStdString(model.string())));
    const Network& opened = w->document()->network();
    REQUIRE(opened.layers.size() == lenet.layers.size());
    CHECK(opened.layers[0].name == lenet.layers[0].name);
    CHECK(w->shapesModel()->rowCount() == int(lenet.layers.size()) + 1); // every layer, then the totals
    CHECK(shapeText(*w, int(lenet.layers.size()) - 1) == QStringLiteral("1×10 (N, features)"));
    CHECK(w->document()->filePath().isEmpty()); // Save never writes JSON over the .onnx

    const QString json = QString::fromStdString((dir.path / "mine.json").string());
    REQUIRE(w->project()->saveTo(json));
    CHECK(std::filesystem::is_directory(dir.path / "mine.weights"));
    const Network saved = loadNetwork(dir.path / "mine.json");
    CHECK(saved.layers.size() == lenet.layers.size());
    CHECK(saved.layers[0].init.kind == "file");

    // File ▸ Export ▸ ONNX from the window, then open what it wrote.
    gui::ExportController* ex = w->exporter();
    ex->setOverwriteQuestion([](const QString&) { return true; });
    const QString again = QString::fromStdString((dir.path / "again.onnx").string());
    REQUIRE(ex->exportOnnx(again));
    auto other = makeWindow();
    REQUIRE(other->openAny(again));
    CHECK(other->document()->network().layers.size() == lenet.layers.size());

    // A truncated model: a message naming the file, the network untouched.
    const auto broken = dir.path / "broken.onnx";
    {
        std::ifstream in(model, std::ios::binary);
        std::string bytes((std::istreambuf_iterator<char>(in)), {});
        std::ofstream(broken, std::ios::binary) << bytes.substr(0, bytes.size() / 3);
    }
    const Network before = other->document()->network();
    CHECK_FALSE(other->openAny(QString::fromStdString(broken.string())));
    CHECK(other->bannerText().contains(QStringLiteral("broken.onnx")));
    CHECK(other->document()->network().sameDescription(before));
}
