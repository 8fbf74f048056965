// Skip connections in the window: the layer list tags a layer that reads anything but the layer above ("← conv1", a
// concat lists every source), the editor picks inputs from the layers above, a rename follows into every reader and
// a delete of a layer others read is refused with a message, all through the undo stack; the receptive field goes
// through every branch.
#include "gui_helpers.h"

#include "compute/network_json.h"
#include "gui/charts/timing_chart.h"
#include "gui/document/receptive_field.h"
#include "gui/models/layer_list_model.h"
#include "gui/pages/run_panel.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QSignalSpy>

using namespace convscope;
using namespace convscope::gui;
using namespace convscope::test;

namespace {

// conv a → relu r → conv b → add(r, b) → concat(input, sum): a residual and a concatenation.
Network skipNetwork()
{
    return parseNetwork(R"({"format": "convscope-network", "version": 1, "name": "skips",
        "input": {"batch": 1, "channels": 2, "height": 9, "width": 9, "source": "random"}, "layers": [
        {"type": "conv2d", "name": "a", "out_channels": 2, "kernel_size": 3, "padding": 1},
        {"type": "relu", "name": "r"},
        {"type": "conv2d", "name": "b", "out_channels": 2, "kernel_size": 3, "padding": 1},
        {"type": "add", "name": "sum", "inputs": ["r", "b"]},
        {"type": "concat", "name": "cat", "inputs": ["input", "sum"]}]})",
        "skips.json", ".");
}

} // namespace

TEST_CASE("the layer list shows the inputs of a layer that does not read the layer above", "[gui][skip]")
{
    NetworkDocument doc;
    doc.reset(skipNetwork(), {});
    LayerListModel model(&doc);
    CHECK(model.index(1).data(LayerListModel::InputsRole).toString().isEmpty()); // reads the layer above
    CHECK(model.index(3).data(LayerListModel::InputsRole).toString() == QStringLiteral("r, b"));
    CHECK(model.index(3).data().toString().contains(QStringLiteral("← r, b")));
    CHECK(model.index(4).data().toString().contains(QStringLiteral("← input, sum")));
    CHECK_FALSE(model.index(2).data().toString().contains(QStringLiteral("←")));

    // The shapes table: the memory alive at each layer, and the peak in the totals row.
    ShapesModel shapes(&doc);
    CHECK_FALSE(shapes.index(3, ShapesModel::Live).data().toString().isEmpty());
    CHECK(shapes.index(5, ShapesModel::Live).data().toString().startsWith(QStringLiteral("peak")));
    CHECK(doc.shapes().peakBytes == doc.shapes().layers[3].liveBytes); // r, b and sum are alive at the add
}

TEST_CASE("renaming a layer renames it in its readers, and undo restores both", "[gui][skip]")
{
    NetworkDocument doc;
    doc.reset(skipNetwork(), {});
    Layer r = doc.network().layers[1];
    r.name = "act";
    REQUIRE(doc.setLayer(1, r, QStringLiteral("Rename layer")));
    CHECK(doc.network().layers[3].inputs == std::vector<std::string> { "act", "b" });
    CHECK(doc.shapes().ok());
    CHECK(doc.undoStack()->count() == 1); // one step for the rename and its readers
    doc.undoStack()->undo();
    CHECK(doc.network().layers[1].name == "r");
    CHECK(doc.network().layers[3].inputs == std::vector<std::string> { "r", "b" });
    doc.undoStack()->redo();
    CHECK(doc.network().layers[3].inputs == std::vector<std::string> { "act", "b" });

    // A name already used, or "input", is refused with a message and changes nothing.
    QSignalSpy refused(&doc, &NetworkDocument::editRefused);
    r = doc.network().layers[1];
    r.name = "b";
    CHECK_FALSE(doc.setLayer(1, r, QStringLiteral("Rename layer")));
    r.name = "input";
    CHECK_FALSE(doc.setLayer(1, r, QStringLiteral("Rename layer")));
    REQUIRE(refused.count() == 2);
    CHECK(refused.at(0).at(0).toString().contains(QStringLiteral("another layer is called b")));
    CHECK(doc.network().layers[1].name == "act");
    CHECK(doc.undoStack()->count() == 1);
}

TEST_CASE("deleting a layer others read is refused with a message; moving one above its source too", "[gui][skip]")
{
    NetworkDocument doc;
    doc.reset(skipNetwork(), {});
    QSignalSpy refused(&doc, &NetworkDocument::editRefused);
    CHECK_FALSE(doc.removeLayer(2)); // b is read by sum
    REQUIRE(refused.count() == 1);
    CHECK(refused.at(0).at(0).toString().contains(QStringLiteral("Cannot remove b: sum reads it")));
    CHECK(doc.network().layers.size() == 5);
    CHECK(doc.undoStack()->count() == 0);
    CHECK_FALSE(doc.moveLayer(3, 1)); // sum above b, which it reads
    CHECK(refused.count() == 2);
    CHECK(refused.at(1).at(0).toString().contains(QStringLiteral("used before its layer")));
    // A layer nobody names can go: the concat at the end, then (undone) back.
    CHECK(doc.removeLayer(4));
    CHECK(doc.network().layers.size() == 4);
    doc.undoStack()->undo();
    CHECK(doc.network().layers.size() == 5);
    CHECK(doc.network().layers[4].inputs == std::vector<std::string> { "input", "sum" });
}

TEST_CASE("the editor picks inputs from the layers above and says why a delete was refused", "[gui][skip]")
{
    auto w = makeWindow();
    NetworkDocument& doc = *w->document();
    doc.reset(skipNetwork(), {});
    NetworkPanel* panel = w->networkPanel();
    panel->setCurrentLayer(2); // b
    auto* inputs = qobject_cast<QListWidget*>(panel->editor()->field(QStringLiteral("inputs")));
    REQUIRE(inputs);
    // "input", a and r: the layers above b; none checked (it reads the layer above).
    REQUIRE(inputs->count() == 3);
    for (int k = 0; k < inputs->count(); ++k)
        CHECK(inputs->item(k)->checkState() == Qt::Unchecked);
    inputs->item(1)->setCheckState(Qt::Checked); // b reads a
    CHECK(doc.network().layers[2].inputs == std::vector<std::string> { "a" });
    CHECK(doc.shapes().ok());
    doc.undoStack()->undo();
    CHECK(doc.network().layers[2].inputs.empty());

    // Rename through the editor's name field: the add follows.
    auto* name = qobject_cast<QLineEdit*>(panel->editor()->field(QStringLiteral("name")));
    REQUIRE(name);
    name->setText(QStringLiteral("conv_b"));
    Q_EMIT name->editingFinished();
    CHECK(doc.network().layers[3].inputs == std::vector<std::string> { "r", "conv_b" });

    // The remove action on a layer others read: refused, said in the panel.
    panel->setCurrentLayer(2);
    auto* remove = panel->findChild<QAction*>(QStringLiteral("removeLayer"));
    REQUIRE(remove);
    remove->trigger();
    CHECK(doc.network().layers.size() == 5);
    auto* message = panel->findChild<QLabel*>(QStringLiteral("editRefused"));
    REQUIRE(message);
    CHECK(message->isVisibleTo(panel));
    CHECK(message->text().contains(QStringLiteral("Cannot remove conv_b")));
}

TEST_CASE("editing a concat's inputs keeps the order its channels are joined in", "[gui][skip]")
{
    auto w = makeWindow();
    NetworkDocument& doc = *w->document();
    Network net = skipNetwork();
    net.layers[4].inputs = { "sum", "input" }; // written by hand: sum's channels first
    doc.reset(std::move(net), {});
    NetworkPanel* panel = w->networkPanel();
    panel->setCurrentLayer(4);
    auto* inputs = qobject_cast<QListWidget*>(panel->editor()->field(QStringLiteral("inputs")));
    REQUIRE(inputs);
    REQUIRE(inputs->count() == 5); // input, a, r, b, sum
    // Checking a third source appends it; the two already there keep their order (list order would be input, a, sum).
    inputs->item(1)->setCheckState(Qt::Checked);
    CHECK(doc.network().layers[4].inputs == std::vector<std::string> { "sum", "input", "a" });
    inputs = qobject_cast<QListWidget*>(panel->editor()->field(QStringLiteral("inputs")));
    REQUIRE(inputs);
    inputs->item(0)->setCheckState(Qt::Unchecked); // drop the network's input
    CHECK(doc.network().layers[4].inputs == std::vector<std::string> { "sum", "a" });
}

TEST_CASE("the receptive field goes through every branch of a skip", "[gui][skip][receptive]")
{
    const Network net = skipNetwork();
    const ShapeReport shapes = inferShapes(net);
    REQUIRE(shapes.ok());
    // Pixel (4, 4) of r: one 3×3 conv. Of sum: r's 3×3 and b's 5×5 (conv on conv), so 5×5 rows 2..6.
    const ReceptiveField viaR = receptiveField(net, shapes, 1, 4, 4);
    REQUIRE(viaR.ok);
    CHECK(viaR.rowSpan() == 3);
    const ReceptiveField viaSum = receptiveField(net, shapes, 3, 4, 4);
    REQUIRE(viaSum.ok);
    CHECK(viaSum.rowSpan() == 5);
    CHECK(viaSum.colSpan() == 5);
    // The concat's input branch reads the pixel itself; its sum branch the 5×5: together still 5×5.
    CHECK(receptiveField(net, shapes, 4, 4, 4).count() == 25);
}

TEST_CASE("a U-Net with skip concatenations runs in the window: every layer timed, kept and compared", "[gui][skip]")
{
    auto w = makeWindow();
    w->runPanel()->setLiveEnabled(false);
    REQUIRE(w->project()->openFile(QString::fromStdString((test::examplesDir() / "tiny_unet.json").string())));
    REQUIRE(w->runPanel()->setSelections({ { "cpu", "direct" }, { "cpu", "im2col_gemm" } }));
    w->runPanel()->setWarmupRepeat(0, 1);
    const int job = w->triggerRun();
    REQUIRE(job > 0);
    RunOutcomePtr o = waitForRun(*w, job);
    REQUIRE(o);
    const size_t layers = o->network.layers.size();
    REQUIRE(layers == 22);
    for (const SelectionResult& s : o->result.selections) {
        INFO(s.selection.str() << " " << s.failure);
        REQUIRE(s.ok);
        for (size_t l = 0; l < layers; ++l) {
            INFO("layer " << l << " " << o->network.layers[l].name);
            REQUIRE(s.layers[l].output); // the feature maps and the |Δ| view read these
            CHECK(s.layers[l].output->shape() == o->result.shapes.layers[l].out);
            CHECK(s.layers[l].error.valid);
            CHECK(s.layers[l].error.relL2 <= 1e-5);
        }
    }
    w->timingChart()->redrawNow();
    CHECK(w->timingChart()->tickLabels().size() == int(layers));
    CHECK(w->timingChart()->tickLabels().contains(QStringLiteral("cat2")));
}
