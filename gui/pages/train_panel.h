// The Train page (issue 33): a training run of the document's network from the window — the loss (cross-entropy,
// MSE, BCE with logits), the optimizer (SGD with momentum, Adam), learning rate, steps and warm-ups, and the target.
// A classifier that ships a class-ordered test set (the trained LeNet-5, the colour CNN) proposes its target itself
// (gui/document/training_setup.h). It runs on the selections of the engine's run settings (what the Run panel
// shows) that can train; the others are named. The results are the engine's (Engine::trainingFinished): the Timing
// page's training chart and the Gradients page follow them; this page says what ran and how the loss went.
#pragma once

#include "gui/document/engine.h"
#include "gui/document/training_setup.h"

#include <QWidget>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;
class QToolButton;

namespace convscope::gui {

class NetworkDocument;

class TrainPanel : public QWidget {
    Q_OBJECT
public:
    TrainPanel(Engine* engine, const NetworkDocument* document, QWidget* parent = nullptr);

    // Starts a training run with the page's fields; the job id, or 0 (and the reason on the page) when it cannot.
    int start();
    // The loss, optimizer, target and options the fields describe, for the document's network (throws InputError).
    TrainingData data() const;
    TrainRequest request(const TrainingData& data) const;
    TrainOutcomePtr outcome() const { return m_outcome; }

    QComboBox* lossBox() const { return m_loss; }
    QComboBox* optimizerBox() const { return m_optimizer; }
    QDoubleSpinBox* lrBox() const { return m_lr; }
    QDoubleSpinBox* momentumBox() const { return m_momentum; }
    QSpinBox* stepsBox() const { return m_steps; }
    QSpinBox* warmupBox() const { return m_warmup; }
    QComboBox* targetBox() const { return m_target; }
    QSpinBox* classBox() const { return m_class; }
    QDoubleSpinBox* valueBox() const { return m_value; }
    QLineEdit* fileEdit() const { return m_file; }
    QCheckBox* logitsBox() const { return m_logits; }
    QCheckBox* inputGradientBox() const { return m_inputGradient; }
    QPushButton* trainButton() const { return m_go; }
    QString targetText() const;
    QString message() const;
    QString selectionsNote() const; // which of the Run panel's selections train, and in which math
    QString summary() const;

private:
    void refreshTargets(); // the network changed: which targets it offers, the proposal first
    void updateFields(); // what the loss, optimizer and target make relevant
    void showOutcome(const TrainOutcomePtr& outcome);

    Engine* m_engine;
    const NetworkDocument* m_document;
    int m_job = 0;
    TrainOutcomePtr m_outcome;

    QComboBox* m_loss;
    QComboBox* m_optimizer;
    QDoubleSpinBox* m_lr;
    QDoubleSpinBox* m_momentum;
    QSpinBox* m_steps;
    QSpinBox* m_warmup;
    QComboBox* m_target;
    QSpinBox* m_class;
    QDoubleSpinBox* m_value;
    QLineEdit* m_file;
    QToolButton* m_browse = nullptr;
    QCheckBox* m_logits;
    QCheckBox* m_inputGradient;
    QLabel* m_targetNote;
    QLabel* m_selections;
    QPushButton* m_go;
    QLabel* m_message;
    QLabel* m_summary;
};

} // namespace convscope::gui
