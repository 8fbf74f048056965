#include "gui_helpers.h"

#include "gui/document/receptive_field.h"
#include "gui/models/layer_list_model.h"

#include <catch2/catch.hpp>

#include <QAbstractItemModelTester>
#include <QMimeData>

using namespace convscope;
using namespace convscope::gui;
using namespace convscope::test;

TEST_CASE("layer list model passes QAbstractItemModelTester through every kind of edit", "[gui][model]")
{
    NetworkDocument doc;
    LayerListModel model(&doc);
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
    ShapesModel shapes(&doc); // follows the document by itself
    QAbstractItemModelTester shapesTester(&shapes, QAbstractItemModelTester::FailureReportingMode::Fatal);

    for (const char* type : layerTypeNames()) {
        Layer l;
        l.spec = makeLayerSpec(type);
        doc.insertLayer(model.rowCount(), l);
    }
    REQUIRE(model.rowCount() == int(layerTypeNames().size()));
    REQUIRE(shapes.rowCount() == model.rowCount() + 1); // totals row
    doc.duplicateLayer(0);
    doc.moveLayer(0, 3);
    doc.removeLayer(2);
    Layer conv = doc.network().layers[0];
    std::get<Conv2d>(conv.spec).stride = { 2, 2 };
    doc.setLayer(0, conv, QStringLiteral("stride"));
    while (doc.undoStack()->canUndo())
        doc.undoStack()->undo();
    CHECK(model.rowCount() == 0);
    while (doc.undoStack()->canRedo())
        doc.undoStack()->redo();
    CHECK(model.rowCount() == int(layerTypeNames().size()));
    // Every row names its layer; invalid ones carry the engine's reason.
    for (int r = 0; r < model.rowCount(); ++r)
        CHECK(!model.index(r).data().toString().isEmpty());
}

TEST_CASE("dragging a layer row reorders the network as one undoable move", "[gui][model]")
{
    NetworkDocument doc;
    LayerListModel model(&doc);
    for (const char* type : { "conv2d", "relu", "maxpool2d" }) {
        Layer l;
        l.spec = makeLayerSpec(type);
        doc.insertLayer(model.rowCount(), l);
    }
    std::unique_ptr<QMimeData> mime(model.mimeData({ model.index(0) }));
    REQUIRE(mime);
    // Dropped below the last row: conv2d goes to the end. The model moves it and tells the view not to
    // remove anything itself.
    CHECK_FALSE(model.dropMimeData(mime.get(), Qt::MoveAction, 3, 0, {}));
    REQUIRE(doc.network().layers.size() == 3);
    CHECK(layerTypeName(doc.network().layers[2].spec) == "conv2d");
    CHECK(layerTypeName(doc.network().layers[0].spec) == "relu");
    doc.undoStack()->undo();
    CHECK(layerTypeName(doc.network().layers[0].spec) == "conv2d");
}

TEST_CASE("receptive field follows padding, stride and dilation exactly", "[gui][receptive]")
{
    Network net;
    net.input = { 1, 1, 16, 16, false, "random" };
    Layer a;
    a.name = "a";
    a.spec = Conv2d { 1, { 3, 3 }, { 1, 1 }, Padding2d::symmetric(0, 0), { 2, 2 }, 1, true }; // dilation 2
    Layer b;
    b.name = "b";
    b.spec = MaxPool2d {};
    net.layers = { a, b };
    const ShapeReport shapes = inferShapes(net);
    REQUIRE(shapes.ok());

    // Conv output (3, 4) reads input rows 3, 5, 7 and columns 4, 6, 8: holes from the dilation.
    ReceptiveField rf = receptiveField(net, shapes, 0, 3, 4);
    REQUIRE(rf.ok);
    CHECK(rf.count() == 9);
    CHECK(rf.rows[3]);
    CHECK_FALSE(rf.rows[4]);
    CHECK(rf.rows[7]);
    CHECK(rf.cols[8]);
    CHECK(rf.rowSpan() == 5);

    // After a 2x2 pool, output (0, 0) covers conv rows 0-1: input rows 0..3 (0,2,4 ∪ 1,3,5).
    rf = receptiveField(net, shapes, 1, 0, 0);
    REQUIRE(rf.ok);
    CHECK(rf.rowSpan() == 6);
    CHECK(rf.count() == 36);

    // Padding: LeNet's c1 (k5, pad 2) output (0, 0) reads input rows 0..2 only.
    Layer c;
    c.name = "c";
    c.spec = Conv2d { 6, { 5, 5 }, { 1, 1 }, Padding2d::symmetric(2, 2), { 1, 1 }, 1, true };
    net.layers = { c };
    rf = receptiveField(net, inferShapes(net), 0, 0, 0);
    CHECK(rf.rowSpan() == 3);
    CHECK(rf.colSpan() == 3);
}

TEST_CASE("undo and redo restore the network exactly after every edit", "[gui][undo]")
{
    auto w = makeWindow();
    std::vector<Network> states { w->document()->network() };
    auto snap = [&] { states.push_back(w->document()->network()); };
    addLayer(*w, "conv2d");
    snap();
    intField(*w, "out_channels")->setValue(8);
    snap();
    pairField(*w, "stride")->heightBox()->setValue(2);
    snap();
    paddingField(*w)->modeBox()->setCurrentIndex(1); // same
    snap();
    addLayer(*w, "relu");
    snap();
    w->networkPanel()->duplicateAction()->trigger();
    snap();
    w->networkPanel()->moveUpAction()->trigger();
    snap();
    w->networkPanel()->removeAction()->trigger();
    snap();

    QUndoStack* undo = w->document()->undoStack();
    REQUIRE(undo->count() == int(states.size()) - 1);
    for (int i = int(states.size()) - 2; i >= 0; --i) {
        undo->undo();
        INFO("after undo to state " << i);
        CHECK(w->document()->network().sameDescription(states[size_t(i)]));
    }
    for (size_t i = 1; i < states.size(); ++i) {
        undo->redo();
        INFO("after redo to state " << i);
        CHECK(w->document()->network().sameDescription(states[i]));
    }
    CHECK(w->isWindowModified());
}
