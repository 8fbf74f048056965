// Editors for the 3-D kinds' parameters: a {depth, height, width} triple with a link toggle (one value for all three
// axes, what a teacher usually means), and 3-D padding as six sides [front, back, top, bottom, left, right] or
// same / valid. The 2-D kinds keep their pair and four-side editors (param_widgets.h).
#pragma once

#include "compute/layer_spec.h"

#include <QWidget>

#include <array>

class QComboBox;
class QSpinBox;
class QToolButton;

namespace convscope::gui {

class TripleEditor : public QWidget {
    Q_OBJECT
public:
    explicit TripleEditor(int minimum, int maximum, QWidget* parent = nullptr);
    Triple value() const;
    void setValue(const Triple& v); // no signal
    QSpinBox* box(int axis) const { return m_boxes[size_t(axis)]; } // 0 depth, 1 height, 2 width
    bool linked() const;
    void setLinked(bool linked);

Q_SIGNALS:
    void valueChanged(const convscope::Triple& value);

private:
    std::array<QSpinBox*, 3> m_boxes {};
    QToolButton* m_link;
};

class Padding3dEditor : public QWidget {
    Q_OBJECT
public:
    explicit Padding3dEditor(QWidget* parent = nullptr);
    Padding3d value() const;
    void setValue(const Padding3d& v); // no signal
    QComboBox* modeBox() const { return m_mode; }
    QSpinBox* side(int i) const { return m_sides[size_t(i)]; } // front, back, top, bottom, left, right

Q_SIGNALS:
    void valueChanged(const convscope::Padding3d& value);

private:
    void updateEnabled();
    QComboBox* m_mode;
    std::array<QSpinBox*, 6> m_sides {};
    QToolButton* m_link;
};

} // namespace convscope::gui
