// Small editors for layer parameters: a {height, width} pair with a link toggle (a teacher changing the
// stride from 1 to 2 usually means both directions), and padding as four sides or same / valid.
#pragma once

#include "compute/layer_spec.h"

#include <QWidget>

class QComboBox;
class QSpinBox;
class QToolButton;

namespace convscope::gui {

class PairEditor : public QWidget {
    Q_OBJECT
public:
    explicit PairEditor(int minimum, int maximum, QWidget* parent = nullptr);
    Pair value() const;
    void setValue(const Pair& v); // no signal
    QSpinBox* heightBox() const { return m_h; }
    QSpinBox* widthBox() const { return m_w; }
    bool linked() const;
    void setLinked(bool linked);

Q_SIGNALS:
    void valueChanged(const convscope::Pair& value);

private:
    QSpinBox* m_h;
    QSpinBox* m_w;
    QToolButton* m_link;
};

class PaddingEditor : public QWidget {
    Q_OBJECT
public:
    explicit PaddingEditor(QWidget* parent = nullptr);
    Padding2d value() const;
    void setValue(const Padding2d& v); // no signal
    QComboBox* modeBox() const { return m_mode; }
    QSpinBox* side(int i) const { return m_sides[i]; } // top, bottom, left, right

Q_SIGNALS:
    void valueChanged(const convscope::Padding2d& value);

private:
    void updateEnabled();
    QComboBox* m_mode;
    QSpinBox* m_sides[4];
    QToolButton* m_link;
};

// Marks a widget as holding an invalid value (a red frame), or clears the mark.
void markInvalid(QWidget* w, bool invalid, const QString& why = {});

} // namespace convscope::gui
