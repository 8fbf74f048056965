// The network input: a built-in sample, seeded random data, an image or an .npy file; batch, channels
// and size. A file is checked before it is used: one that cannot be read leaves the network untouched
// and the reason is reported through problem().
#pragma once

#include "gui/document/network_document.h"

#include <QWidget>

class QCheckBox;
class QComboBox;
class QLabel;
class QSpinBox;

namespace convscope::gui {

class InputPanel : public QWidget {
    Q_OBJECT
public:
    explicit InputPanel(NetworkDocument* doc, QWidget* parent = nullptr);

    // Uses an image or .npy file as the input. Returns false (and emits problem) when it cannot.
    bool openInputFile(const QString& path);
    static bool isInputFile(const QString& path);

Q_SIGNALS:
    void problem(const QString& message);

private:
    void load();
    void commit(const QString& text, const QString& mergeKey);
    QString sourceFromWidgets() const;

    NetworkDocument* m_doc;
    QComboBox* m_source;
    QSpinBox* m_seed;
    QLabel* m_file;
    QSpinBox* m_batch;
    QSpinBox* m_channels;
    QSpinBox* m_height;
    QSpinBox* m_width;
    QCheckBox* m_flat;
};

} // namespace convscope::gui
