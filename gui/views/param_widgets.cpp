#include "gui/views/param_widgets.h"

#include <QComboBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QToolButton>

namespace convscope::gui {

namespace {
    QSpinBox* makeSpin(int minimum, int maximum, QWidget* parent)
    {
        auto* s = new QSpinBox(parent);
        s->setRange(minimum, maximum);
        s->setAccelerated(true);
        return s;
    }

    QToolButton* makeLink(QWidget* parent, const QString& text, const QString& tip)
    {
        auto* b = new QToolButton(parent);
        b->setCheckable(true);
        b->setText(text);
        b->setToolTip(tip);
        b->setAutoRaise(true);
        return b;
    }
} // namespace

void markInvalid(QWidget* w, bool invalid, const QString& why)
{
    if (!w)
        return;
    const bool was = w->property("invalid").toBool();
    if (was == invalid && w->toolTip() == why)
        return;
    w->setProperty("invalid", invalid);
    // Type selectors, so a composite editor marks its inputs and not every label and button inside it.
    w->setStyleSheet(invalid ? QStringLiteral("QAbstractSpinBox, QComboBox, QLineEdit { border: 2px solid #c62828;"
                                              " border-radius: 3px; background: #fff5f5; }")
                             : QString());
    w->setToolTip(why);
}

PairEditor::PairEditor(int minimum, int maximum, QWidget* parent)
    : QWidget(parent)
    , m_h(makeSpin(minimum, maximum, this))
    , m_w(makeSpin(minimum, maximum, this))
    , m_link(makeLink(this, QStringLiteral("H=W"), tr("Height and width together")))
{
    auto* row = new QHBoxLayout(this);
    row->setContentsMargins(0, 0, 0, 0);
    row->addWidget(m_h, 1);
    row->addWidget(new QLabel(QStringLiteral("×"), this));
    row->addWidget(m_w, 1);
    row->addWidget(m_link);
    m_link->setChecked(true);
    m_h->setToolTip(tr("height"));
    m_w->setToolTip(tr("width"));
    auto changed = [this](QSpinBox* from, QSpinBox* other) {
        if (m_link->isChecked()) {
            QSignalBlocker block(other);
            other->setValue(from->value());
        }
        Q_EMIT valueChanged(value());
    };
    connect(m_h, &QSpinBox::valueChanged, this, [=, this] { changed(m_h, m_w); });
    connect(m_w, &QSpinBox::valueChanged, this, [=, this] { changed(m_w, m_h); });
}

Pair PairEditor::value() const { return { m_h->value(), m_w->value() }; }

void PairEditor::setValue(const Pair& v)
{
    QSignalBlocker bh(m_h), bw(m_w);
    if (m_h->value() != v[0])
        m_h->setValue(int(v[0]));
    if (m_w->value() != v[1])
        m_w->setValue(int(v[1]));
    if (v[0] != v[1])
        m_link->setChecked(false);
}

bool PairEditor::linked() const { return m_link->isChecked(); }
void PairEditor::setLinked(bool linked) { m_link->setChecked(linked); }

PaddingEditor::PaddingEditor(QWidget* parent)
    : QWidget(parent)
    , m_mode(new QComboBox(this))
    , m_link(makeLink(this, tr("all"), tr("All four sides together")))
{
    m_mode->addItem(tr("explicit"), int(Padding2d::Mode::Explicit));
    m_mode->addItem(tr("same"), int(Padding2d::Mode::Same));
    m_mode->addItem(tr("valid"), int(Padding2d::Mode::Valid));
    m_mode->setToolTip(tr("explicit sides, or TensorFlow's \"same\" / \"valid\""));
    auto* grid = new QGridLayout(this);
    grid->setContentsMargins(0, 0, 0, 0);
    grid->addWidget(m_mode, 0, 0);
    const char* names[4] = { "top", "bottom", "left", "right" };
    for (int i = 0; i < 4; ++i) {
        m_sides[i] = makeSpin(0, 4096, this);
        m_sides[i]->setToolTip(tr(names[i]));
        m_sides[i]->setPrefix(QStringLiteral("%1 ").arg(QChar(QLatin1Char(names[i][0])).toUpper()));
        grid->addWidget(m_sides[i], 1 + i / 2, i % 2);
    }
    grid->addWidget(m_link, 0, 1, Qt::AlignRight);
    m_link->setChecked(true);
    for (int i = 0; i < 4; ++i) {
        connect(m_sides[i], &QSpinBox::valueChanged, this, [this, i](int v) {
            if (m_link->isChecked()) {
                for (int j = 0; j < 4; ++j) {
                    QSignalBlocker block(m_sides[j]);
                    m_sides[j]->setValue(v);
                }
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

Padding2d PaddingEditor::value() const
{
    Padding2d p;
    p.mode = Padding2d::Mode(m_mode->currentData().toInt());
    if (p.mode == Padding2d::Mode::Explicit) {
        p.top = m_sides[0]->value();
        p.bottom = m_sides[1]->value();
        p.left = m_sides[2]->value();
        p.right = m_sides[3]->value();
    }
    return p;
}

void PaddingEditor::setValue(const Padding2d& v)
{
    QSignalBlocker bm(m_mode);
    m_mode->setCurrentIndex(m_mode->findData(int(v.mode)));
    const int64_t sides[4] = { v.top, v.bottom, v.left, v.right };
    for (int i = 0; i < 4; ++i) {
        QSignalBlocker block(m_sides[i]);
        if (m_sides[i]->value() != sides[i])
            m_sides[i]->setValue(int(sides[i]));
    }
    if (!(v.top == v.bottom && v.bottom == v.left && v.left == v.right))
        m_link->setChecked(false);
    updateEnabled();
}

void PaddingEditor::updateEnabled()
{
    const bool explicitMode = m_mode->currentData().toInt() == int(Padding2d::Mode::Explicit);
    for (auto* s : m_sides)
        s->setEnabled(explicitMode);
    m_link->setEnabled(explicitMode);
}

} // namespace convscope::gui
