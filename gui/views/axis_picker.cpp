#include "gui/views/axis_picker.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QStringList>

#include <algorithm>

namespace convscope::gui {

AxisPicker::AxisPicker(QWidget* parent)
    : QWidget(parent)
    , m_layout(new QHBoxLayout(this))
    , m_tiles(new QSpinBox(this))
    , m_tilesLabel(new QLabel(tr("tiles from"), this))
{
    setObjectName(QStringLiteral("axisPicker"));
    m_layout->setContentsMargins(0, 0, 0, 0);
    m_tiles->setObjectName(QStringLiteral("firstTile"));
    m_tiles->setToolTip(tr("The grid draws this many tiles at most: which one it starts at"));
    m_layout->addWidget(m_tilesLabel);
    m_layout->addWidget(m_tiles);
    m_layout->addStretch(1);
    m_tilesLabel->hide();
    m_tiles->hide();
    connect(m_tiles, &QSpinBox::valueChanged, this, &AxisPicker::changed);
}

void AxisPicker::setAxes(const std::vector<Axis>& axes, int64_t tiles, int64_t perPage)
{
    // The same axes (a refresh after one of the boxes changed): keep the boxes, which may be emitting right now.
    const bool same = axes.size() == m_axes.size()
        && std::equal(axes.begin(), axes.end(), m_axes.begin(), [](const Axis& a, const Entry& e) {
               return a.axis == e.axis.axis && a.name == e.axis.name && a.size == e.axis.size;
           });
    std::vector<Entry> kept;
    for (const Axis& a : axes) {
        if (same)
            break;
        int64_t value = 0;
        for (const Entry& e : m_axes)
            if (e.axis.name == a.name && e.axis.size == a.size)
                value = e.box->value();
        auto* label = new QLabel(a.name, this);
        auto* box = new QSpinBox(this);
        box->setObjectName(QStringLiteral("pick_") + a.name);
        box->setRange(0, int(std::max<int64_t>(0, a.size - 1)));
        box->setSuffix(tr(" of 0…%1").arg(a.size - 1));
        box->setToolTip(tr("The index along %1 (axis %2) the output is shown at").arg(a.name).arg(a.axis));
        box->setValue(int(value));
        connect(box, &QSpinBox::valueChanged, this, &AxisPicker::changed);
        m_layout->insertWidget(int(2 * kept.size()), label);
        m_layout->insertWidget(int(2 * kept.size() + 1), box);
        kept.push_back({ a, label, box });
    }
    if (!same) {
        for (Entry& e : m_axes) {
            e.label->hide();
            e.box->hide();
            e.label->deleteLater();
            e.box->deleteLater();
        }
        m_axes = std::move(kept);
    }
    m_tilesShown = perPage > 0 && tiles > perPage;
    {
        const QSignalBlocker block(m_tiles);
        m_tiles->setRange(0, int(std::max<int64_t>(0, tiles - 1)));
        m_tiles->setSingleStep(int(std::max<int64_t>(1, perPage)));
        m_tiles->setSuffix(tr(" (%1 of %2 shown)").arg(std::min(tiles, perPage)).arg(tiles));
        if (!m_tilesShown)
            m_tiles->setValue(0);
    }
    m_tiles->setVisible(m_tilesShown);
    m_tilesLabel->setVisible(m_tilesShown);
    setVisible(!isEmpty());
}

int64_t AxisPicker::index(int axis) const
{
    for (const Entry& e : m_axes)
        if (e.axis.axis == axis)
            return e.box->value();
    return 0;
}

void AxisPicker::setIndex(int axis, int64_t value)
{
    if (QSpinBox* b = box(axis))
        b->setValue(int(value));
}

int64_t AxisPicker::firstTile() const { return m_tilesShown ? m_tiles->value() : 0; }

QSpinBox* AxisPicker::box(int axis) const
{
    for (const Entry& e : m_axes)
        if (e.axis.axis == axis)
            return e.box;
    return nullptr;
}

QString AxisPicker::text() const
{
    QStringList parts;
    for (const Entry& e : m_axes)
        parts << tr("%1 = %2 of 0…%3").arg(e.axis.name).arg(e.box->value()).arg(e.axis.size - 1);
    return parts.join(QStringLiteral(" · "));
}

} // namespace convscope::gui
