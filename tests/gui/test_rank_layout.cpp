// Tensors of rank 1 to 6 in the window: the shapes table gives every rank's dims, each rank's output shows in its
// view, and the layer editor edits reshape's shape, transpose's dims and the axes.
#include "gui_helpers.h"

#include "gui/pages/feature_map_panel.h"
#include "gui/pages/run_panel.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

#include <QLineEdit>
#include <QSpinBox>
#include <QUndoStack>

#include <fstream>

using namespace convscope;
using namespace convscope::gui;
using namespace convscope::test;

TEST_CASE("a network of rank-3 and rank-6 tensors shows its shapes, runs, shows its maps and edits its layout fields",
    "[gui][rank]")
{
    TempDir dir;
    const auto path = dir.path / "tokens.json";
    std::ofstream(path) << R"({ "format": "convscope-network", "version": 1, "name": "tokens",
  "input": { "shape": [2, 6, 5], "source": "random:4" },
  "layers": [ { "type": "transpose", "name": "t", "dims": [0, 2, 1] },
              { "type": "reshape", "name": "r6", "shape": [2, 5, 1, 2, 3, 1] },
              { "type": "concat", "name": "cat", "inputs": ["r6", "r6"], "dim": 3 },
              { "type": "flatten", "name": "f", "start_dim": 0, "end_dim": -1 } ] })";
    auto w = makeWindow();
    w->runPanel()->setLiveEnabled(false);
    REQUIRE(w->project()->openFile(QString::fromStdString(path.string())));
    CHECK(shapeText(*w, 0) == QStringLiteral("2×5×6 (N, d1, d2)"));
    CHECK(shapeText(*w, 1) == QStringLiteral("2×5×1×2×3×1 (N, d1, d2, d3, d4, d5)"));
    CHECK(shapeText(*w, 2) == QStringLiteral("2×5×1×4×3×1 (N, d1, d2, d3, d4, d5)"));
    CHECK(shapeText(*w, 3) == QStringLiteral("120"));

    REQUIRE(w->runPanel()->setSelections({ { "cpu", "direct" } }));
    w->runPanel()->setWarmupRepeat(0, 1);
    const int job = w->triggerRun();
    REQUIRE(job > 0);
    RunOutcomePtr outcome = waitForRun(*w, job);
    REQUIRE(outcome);
    REQUIRE(outcome->result.selections.at(0).ok);
    // Every layer shows in the view its rank takes (tests/gui/test_tensor_views.cpp checks each in detail).
    const OutputForm forms[]
        = { OutputForm::HeatMap, OutputForm::SlicedMaps, OutputForm::SlicedMaps, OutputForm::Bars };
    for (int layer = 0; layer < 4; ++layer) {
        w->networkPanel()->setCurrentLayer(layer);
        CHECK_FALSE(w->featureMaps()->isVolumeShown());
        CHECK(w->featureMaps()->outputView().form == forms[layer]);
        CHECK(w->featureMaps()->isPlotShown() == (layer == 0 || layer == 3));
    }
    // The rank-3 input beside them: one tile of its two axes after N, at the batch item.
    const PlaneSet& in = w->featureMaps()->inputGrid()->planes();
    REQUIRE((in.channels == 1 && in.height == 6 && in.width == 5));
    CHECK(in.values[7] == outcome->input.data()[7]);

    // The editor: transpose's dims, reshape's shape, concat's dim.
    auto* editor = w->networkPanel()->editor();
    w->networkPanel()->setCurrentLayer(0);
    auto* dims = qobject_cast<QLineEdit*>(editor->field(QStringLiteral("dims")));
    REQUIRE(dims);
    CHECK(dims->text() == QStringLiteral("0, 2, 1"));
    dims->setText(QStringLiteral("[1, 0, 2]"));
    Q_EMIT dims->editingFinished();
    CHECK(std::get<Transpose>(w->document()->network().layers[0].spec).dims == std::vector<int64_t> { 1, 0, 2 });
    dims->setText(QStringLiteral("1, x"));
    Q_EMIT dims->editingFinished(); // not a list of integers: not committed
    CHECK(std::get<Transpose>(w->document()->network().layers[0].spec).dims == std::vector<int64_t> { 1, 0, 2 });
    w->document()->undoStack()->undo();
    w->networkPanel()->setCurrentLayer(1);
    auto* shape = qobject_cast<QLineEdit*>(editor->field(QStringLiteral("shape")));
    REQUIRE(shape);
    shape->setText(QStringLiteral("2, -1, 3"));
    Q_EMIT shape->editingFinished();
    CHECK(shapeText(*w, 1) == QStringLiteral("2×10×3 (N, d1, d2)"));
    w->document()->undoStack()->undo();
    w->networkPanel()->setCurrentLayer(2);
    auto* dim = qobject_cast<QSpinBox*>(editor->field(QStringLiteral("dim")));
    REQUIRE(dim);
    CHECK(dim->value() == 3);
    dim->setValue(-1);
    CHECK(shapeText(*w, 2) == QStringLiteral("2×5×1×2×3×2 (N, d1, d2, d3, d4, d5)"));
    w->networkPanel()->setCurrentLayer(3);
    auto* start = qobject_cast<QSpinBox*>(editor->field(QStringLiteral("start_dim")));
    REQUIRE(start);
    start->setValue(1);
    CHECK(shapeText(*w, 3) == QStringLiteral("2×60 (N, d1)"));
}
