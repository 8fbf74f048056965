// Latent interpolation in the window (the autoencoder lecture): the network is cut at a layer (its latent), two
// inputs are encoded, their latents blended new_z = (1 − t)·z1 + t·z2 for t = 0 … 1, and every blend decoded — as
// one batch and one by one — on each selection of the engine's run settings (what the Run panel shows). The decoded
// volumes appear as a strip along t (one tile per step: a maximum projection or the middle slice along an axis), and a
// table gives each selection's encoder time and both decoders' times with what batching buys.
#pragma once

#include "gui/document/engine.h"
#include "gui/views/volume_slices.h"

#include <QWidget>

class QComboBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QScrollArea;
class QSpinBox;
class QTableWidget;

namespace convscope::gui {

class FeatureMapGrid;
class NetworkDocument;

class InterpolationPanel : public QWidget {
    Q_OBJECT
public:
    InterpolationPanel(Engine* engine, const NetworkDocument* document, QWidget* parent = nullptr);

    // Starts an interpolation with the panel's fields and the engine's run settings (selections, warm-ups, repeats,
    // math); the job id, or 0 (and a message) when it cannot start.
    int start();
    void setResult(InterpolationResultPtr result);
    InterpolationResultPtr result() const { return m_result; }

    FeatureMapGrid* strip() const { return m_strip; }
    QScrollArea* stripScroll() const { return m_stripScroll; }
    QTableWidget* timingTable() const { return m_table; }
    QComboBox* latentBox() const { return m_at; }
    QLineEdit* fromEdit() const { return m_from; }
    QLineEdit* toEdit() const { return m_to; }
    QSpinBox* stepsBox() const { return m_steps; }
    QComboBox* selectionBox() const { return m_selection; }
    QComboBox* viewBox() const { return m_view; }
    QString message() const;
    QString caption() const;

private:
    void refreshLayers();
    void showStrip();

    Engine* m_engine;
    const NetworkDocument* m_document;
    int m_job = 0;
    InterpolationResultPtr m_result;

    QComboBox* m_at;
    QLineEdit* m_from;
    QLineEdit* m_to;
    QSpinBox* m_steps;
    QPushButton* m_go;
    QComboBox* m_selection;
    QComboBox* m_view;
    QLabel* m_caption;
    FeatureMapGrid* m_strip;
    QScrollArea* m_stripScroll;
    QTableWidget* m_table;
    QLabel* m_message;
};

} // namespace convscope::gui
