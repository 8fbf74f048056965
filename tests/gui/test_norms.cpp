// The normalization kinds in the window: adding a layer_norm fills normalized_shape with the last axis of what it reads
// (PyTorch requires one), the editor shows and edits it, and group_norm's groups field.
#include "gui_helpers.h"

#include "compute/network_json.h"
#include "gui/pages/network_panel.h"
#include "gui/views/layer_editor.h"

#include <catch2/catch.hpp>

#include <QAction>
#include <QLineEdit>
#include <QSpinBox>

using namespace convscope;
using namespace convscope::gui;

TEST_CASE("adding a layer_norm takes the last axis of its input; its fields edit the layer", "[gui][norm]")
{
    auto w = test::makeWindow();
    NetworkDocument& doc = *w->document();
    doc.reset(
        parseNetwork(
            R"({"format": "convscope-network", "version": 1, "input": {"shape": [2, 7, 12], "source": "random"}, "layers": [{"type": "relu", "name": "r"}]})",
            "net", "."),
        {});
    NetworkPanel* panel = w->networkPanel();
    panel->setCurrentLayer(0);
    auto* add = panel->findChild<QAction*>(QStringLiteral("add_layer_norm"));
    REQUIRE(add);
    add->trigger();
    REQUIRE(doc.network().layers.size() == 2);
    CHECK(std::get<LayerNorm>(doc.network().layers[1].spec).normalized_shape == std::vector<int64_t> { 12 });
    CHECK(doc.shapes().ok());
    panel->setCurrentLayer(1);
    auto* shape = qobject_cast<QLineEdit*>(panel->editor()->field(QStringLiteral("normalized_shape")));
    REQUIRE(shape);
    shape->setText(QStringLiteral("7, 12"));
    Q_EMIT shape->editingFinished();
    CHECK(std::get<LayerNorm>(doc.network().layers[1].spec).normalized_shape == std::vector<int64_t> { 7, 12 });
    CHECK(doc.shapes().ok());

    auto* addGroup = panel->findChild<QAction*>(QStringLiteral("add_group_norm"));
    REQUIRE(addGroup);
    addGroup->trigger();
    REQUIRE(doc.network().layers.size() == 3);
    panel->setCurrentLayer(2);
    CHECK(panel->editor()->field(QStringLiteral("num_groups")) != nullptr);
    CHECK(panel->editor()->field(QStringLiteral("affine")) != nullptr);
}
