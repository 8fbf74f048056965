#include "gui/views/volume_param_widgets.h"

#include <QComboBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QToolButton>

namespace convscope::gui {

namespace {
    QSpinBox* volumeSpin(int minimum, int maximum, QWidget* parent)
    {
        auto* s = new QSpinBox(parent);
        s->setRange(minimum, maximum);
        s->setAccelerated(true);
        return s;
    }

    QToolButton* volumeLink(QWidget* parent, const QString& text, const QString& tip)
    {
        auto* b = new QToolButton(parent);
        b->setCheckable(true);
        b->setText(text);
        b->setToolTip(tip);
        b->setAutoRaise(true);
        b->setChecked(true);
        return b;
    }
} // namespace

TripleEditor::TripleEditor(int minimum, int maximum, QWidget* parent)
    : QWidget(parent)
    , m_link(volumeLink(this, QStringLiteral("D=H=W"), tr("Depth, height and width together")))
{
    auto* row = new QHBoxLayout(this);
    row->setContentsMargins(0, 0, 0, 0);
    const char* axes[3] = { "depth", "height", "width" };
    for (int i = 0; i < 3; ++i) {
        m_boxes[size_t(i)] = volumeSpin(minimum, maximum, this);
        m_boxes[size_t(i)]->setToolTip(tr(axes[i]));
        if (i)
            row->addWidget(new QLabel(QStringLiteral("×"), this));
        row->addWidget(m_boxes[size_t(i)], 1);
        connect(m_boxes[size_t(i)], &QSpinBox::valueChanged, this, [this, i](int v) {
            if (m_link->isChecked())
                for (int j = 0; j < 3; ++j)
                    if (j != i) {
                        QSignalBlocker block(m_boxes[size_t(j)]);
                        m_boxes[size_t(j)]->setValue(v);
                    }
            Q_EMIT valueChanged(value());
        });
    }
    row->addWidget(m_link);
}

Triple TripleEditor::value() const { return { m_boxes[0]->value(), m_boxes[1]->value(), m_boxes[2]->value() }; }

void TripleEditor::setValue(const Triple& v)
{
    for (size_t i = 0; i < 3; ++i) {
        QSignalBlocker block(m_boxes[i]);
        if (m_boxes[i]->value() != v[i])
            m_boxes[i]->setValue(int(v[i]));
    }
    if (!(v[0] == v[1] && v[1] == v[2]))
        m_link->setChecked(false);
}

bool TripleEditor::linked() const { return m_link->isChecked(); }
void TripleEditor::setLinked(bool linked) { m_link->setChecked(linked); }

Padding3dEditor::Padding3dEditor(QWidget* parent)
    : QWidget(parent)
    , m_mode(new QComboBox(this))
    , m_link(volumeLink(this, tr("all"), tr("All six sides together")))
{
    m_mode->addItem(tr("explicit"), int(Padding3d::Mode::Explicit));
    m_mode->addItem(tr("same"), int(Padding3d::Mode::Same));
    m_mode->addItem(tr("valid"), int(Padding3d::Mode::Valid));
    m_mode->setToolTip(tr("explicit sides, or TensorFlow's \"same\" / \"valid\""));
    auto* grid = new QGridLayout(this);
    grid->setContentsMargins(0, 0, 0, 0);
    grid->addWidget(m_mode, 0, 0);
    grid->addWidget(m_link, 0, 1, Qt::AlignRight);
    const char* names[6] = { "front", "back", "top", "bottom", "left", "right" };
    for (int i = 0; i < 6; ++i) {
        auto* s = volumeSpin(0, 4096, this);
        s->setToolTip(tr(names[i]));
        s->setPrefix(QStringLiteral("%1 ").arg(QChar(QLatin1Char(names[i][0])).toUpper()));
        m_sides[size_t(i)] = s;
        grid->addWidget(s, 1 + i / 2, i % 2);
        connect(s, &QSpinBox::valueChanged, this, [this](int v) {
            if (m_link->isChecked())
                for (QSpinBox* other : m_sides) {
                    QSignalBlocker block(other);
                    other->setValue(v);
                }
            Q_EMIT valueChanged(value());
        });
    }
    connect(m_mode, &QComboBox::currentIndexChanged, this, [this] {
        updateEnabled();
        Q_EMIT valueChanged(value());
    });
    updateEnabled();
}

Padding3d Padding3dEditor::value() const
{
    Padding3d p;
    p.mode = Padding3d::Mode(m_mode->currentData().toInt());
    if (p.mode == Padding3d::Mode::Explicit) {
        p.front = m_sides[0]->value();
        p.back = m_sides[1]->value();
        p.top = m_sides[2]->value();
        p.bottom = m_sides[3]->value();
        p.left = m_sides[4]->value();
        p.right = m_sides[5]->value();
    }
    return p;
}

void Padding3dEditor::setValue(const Padding3d& v)
{
    QSignalBlocker bm(m_mode);
    m_mode->setCurrentIndex(m_mode->findData(int(v.mode)));
    const int64_t sides[6] = { v.front, v.back, v.top, v.bottom, v.left, v.right };
    bool equal = true;
    for (size_t i = 0; i < 6; ++i) {
        QSignalBlocker block(m_sides[i]);
        if (m_sides[i]->value() != sides[i])
            m_sides[i]->setValue(int(sides[i]));
        equal = equal && sides[i] == sides[0];
    }
    if (!equal)
        m_link->setChecked(false);
    updateEnabled();
}

void Padding3dEditor::updateEnabled()
{
    const bool explicitMode = m_mode->currentData().toInt() == int(Padding3d::Mode::Explicit);
    for (auto* s : m_sides)
        s->setEnabled(explicitMode);
    m_link->setEnabled(explicitMode);
}

} // namespace convscope::gui
