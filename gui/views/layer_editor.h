// The selected layer's parameters. Every change is one undoable edit of the document; the engine's
// verdict comes back at once through shape inference: an impossible value is marked in place with the
// engine's message (editing is never blocked, running is), and the output-size formula with the
// numbers filled in is shown under the fields.
#pragma once

#include "gui/document/network_document.h"

#include <QWidget>

#include <functional>
#include <string>
#include <vector>

class QFormLayout;
class QLabel;
class QLineEdit;

namespace convscope::gui {

class LayerEditor : public QWidget {
    Q_OBJECT
public:
    explicit LayerEditor(NetworkDocument* doc, QWidget* parent = nullptr);

    void setLayerIndex(int index);
    int layerIndex() const { return m_index; }
    // The editor's widgets by parameter name ("stride", "kernel_size", "out_channels", ...), for tests
    // and for marking invalid values.
    QWidget* field(const QString& key) const;
    QString errorText() const;
    QString formulaText() const;

private:
    struct Field {
        QString key;
        QWidget* widget;
        std::function<void(const Layer&)> load;
    };
    void rebuild();
    void refresh();
    void commit(const QString& key, const QString& text, const std::function<void(Layer&)>& change);
    void addField(const QString& key, const QString& label, QWidget* w, std::function<void(const Layer&)> load);
    void buildSpecFields(const LayerSpec& spec);
    void buildInitFields(const Layer& layer);
    void buildPadFields();
    void buildVolumeFields(const LayerSpec& spec); // layer_editor_volume.cpp
    void buildLayoutFields(const LayerSpec& spec); // layer_editor_layout.cpp: axes, reshape's shape, transpose's dims
    void buildOpFields(const LayerSpec& spec); // layer_editor_math.cpp: unary's and binary's op
    void buildReduceFields(const LayerSpec& spec); // layer_editor_reduce.cpp: reduce's op, dims and keepdim
    void buildInputFields();
    void markFields(const QString& error);

    NetworkDocument* m_doc;
    int m_index = -1;
    std::string m_type; // the layer kind the fields were built for
    QWidget* m_form = nullptr;
    QFormLayout* m_layout = nullptr;
    QLabel* m_title;
    QLabel* m_error;
    QLabel* m_formula;
    QLineEdit* m_name = nullptr;
    std::vector<Field> m_fields;
};

} // namespace convscope::gui
