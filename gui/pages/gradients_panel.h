// The Gradients page (issue 33): what the last training step's backward pass computed. Above, each conv layer's
// weight gradient ∂L/∂w drawn the way the filters view draws weights (the same FiltersView over FilterGrid: one
// diverging scale centred on zero, colour kernels for a first layer on a colour picture); below, the saliency map —
// |∂L/∂x| over the input picture (gui/views/saliency_view.h), which pixels the loss depended on. It follows the
// engine's training runs itself (Engine::trainingFinished) and the window's selected layer (Page::showLayer).
#pragma once

#include "gui/document/engine.h"
#include "gui/pages/page.h"

#include <QWidget>

class QCheckBox;
class QComboBox;
class QLabel;

namespace convscope::gui {

class FiltersView;
class SaliencyView;

class GradientsPanel : public QWidget, public Page {
    Q_OBJECT
public:
    explicit GradientsPanel(Engine* engine, QWidget* parent = nullptr);

    void setTraining(TrainOutcomePtr outcome);
    TrainOutcomePtr training() const { return m_outcome; }
    void showOutcome(RunOutcomePtr, const QString&) override { } // a run has no gradients
    void clearOutcome() override { setTraining(nullptr); }
    void showLayer(int index) override; // a conv layer of the trained network: its weight gradient

    FiltersView* weightGradients() const { return m_filters; }
    SaliencyView* saliency() const { return m_saliency; }
    QComboBox* selectionBox() const { return m_selection; }
    QComboBox* layerBox() const { return m_layer; }
    QCheckBox* overlayBox() const { return m_overlay; }
    QString saliencyCaption() const;

private:
    void showSelection(); // the chosen selection's gradients
    void showWeightGradient();
    const SelectionTraining* selected() const;

    TrainOutcomePtr m_outcome;
    QComboBox* m_selection;
    QComboBox* m_layer;
    FiltersView* m_filters;
    QCheckBox* m_overlay;
    QLabel* m_saliencyCaption;
    SaliencyView* m_saliency;
};

} // namespace convscope::gui
