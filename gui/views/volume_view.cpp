#include "gui/views/volume_view.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QSignalBlocker>
#include <QSlider>
#include <QSpinBox>
#include <QStackedWidget>
#include <QVBoxLayout>

#include <algorithm>

namespace convscope::gui {

namespace {
    constexpr std::array<VolumeAxis, 3> kVolumeAxes { VolumeAxis::D, VolumeAxis::H, VolumeAxis::W };

    // What a cut's rows and columns are, for its title.
    QString cutAxesText(VolumeAxis cutAlong)
    {
        switch (cutAlong) {
        case VolumeAxis::D:
            return QStringLiteral("H × W");
        case VolumeAxis::H:
            return QStringLiteral("D × W");
        case VolumeAxis::W:
            break;
        }
        return QStringLiteral("D × H");
    }
} // namespace

VolumeView::VolumeView(QWidget* parent)
    : QWidget(parent)
    , m_modeBox(new QComboBox(this))
    , m_axisBox(new QComboBox(this))
    , m_slider(new QSlider(Qt::Horizontal, this))
    , m_sliceLabel(new QLabel(this))
    , m_channelBox(new QSpinBox(this))
    , m_caption(new QLabel(this))
    , m_stack(new QStackedWidget(this))
    , m_grid(new FeatureMapGrid(this))
{
    m_modeBox->setObjectName(QStringLiteral("volumeMode"));
    m_modeBox->addItem(tr("Slices"), int(Mode::Slices));
    m_modeBox->addItem(tr("Orthogonal"), int(Mode::Orthogonal));
    m_modeBox->addItem(tr("Max projection"), int(Mode::Projection));
    m_modeBox->setToolTip(tr("Slices: every channel at one index · Orthogonal: one channel cut three ways through a "
                             "voxel · Max projection: each channel's maximum along the axis"));
    m_axisBox->setObjectName(QStringLiteral("volumeAxis"));
    for (VolumeAxis a : kVolumeAxes)
        m_axisBox->addItem(axisName(a), int(a));
    m_axisBox->setToolTip(tr("The axis to slice or project along"));
    m_slider->setObjectName(QStringLiteral("volumeSlice"));
    m_slider->setToolTip(tr("The slice along the chosen axis"));
    m_slider->setPageStep(4);
    m_sliceLabel->setMinimumWidth(m_sliceLabel->fontMetrics().horizontalAdvance(QStringLiteral("D 000/000")));
    m_channelBox->setObjectName(QStringLiteral("volumeChannel"));
    m_channelBox->setPrefix(tr("channel "));
    m_channelBox->setToolTip(tr("The channel the orthogonal view cuts"));
    m_caption->setObjectName(QStringLiteral("volumeCaption"));
    m_grid->setObjectName(QStringLiteral("volumeSlices"));

    auto* bar = new QHBoxLayout;
    bar->setContentsMargins(0, 0, 0, 0);
    bar->addWidget(m_modeBox);
    bar->addWidget(new QLabel(tr("along"), this));
    bar->addWidget(m_axisBox);
    bar->addWidget(m_slider, 1);
    bar->addWidget(m_sliceLabel);
    bar->addWidget(m_channelBox);

    auto* cutsPage = new QWidget(this);
    auto* cutsLayout = new QHBoxLayout(cutsPage);
    cutsLayout->setContentsMargins(0, 0, 0, 0);
    for (VolumeAxis a : kVolumeAxes) {
        const auto i = size_t(a);
        auto* column = new QVBoxLayout;
        m_cutTitles[i] = new QLabel(cutsPage);
        m_cuts[i] = new FeatureMapGrid(cutsPage);
        m_cuts[i]->setObjectName(QStringLiteral("volumeCut") + axisName(a));
        column->addWidget(m_cutTitles[i]);
        column->addWidget(m_cuts[i], 1);
        cutsLayout->addLayout(column, 1);
        connect(m_cuts[i], &FeatureMapGrid::clicked, this,
            [this, a](int, int, int row, int col) { onCutClicked(a, row, col); });
        connect(m_cuts[i], &FeatureMapGrid::hovered, this, [this, a](int channel, int row, int col, float value) {
            Q_EMIT hovered(voxelText(channel, voxelOf(a, m_point[size_t(a)], row, col))
                + tr(" · value %1").arg(double(value), 0, 'g', 6));
        });
    }
    m_stack->addWidget(m_grid);
    m_stack->addWidget(cutsPage);

    auto* box = new QVBoxLayout(this);
    box->setContentsMargins(0, 0, 0, 0);
    box->addLayout(bar);
    box->addWidget(m_caption);
    box->addWidget(m_stack, 1);

    connect(
        m_modeBox, &QComboBox::currentIndexChanged, this, [this] { setMode(Mode(m_modeBox->currentData().toInt())); });
    connect(m_axisBox, &QComboBox::currentIndexChanged, this,
        [this] { setAxis(VolumeAxis(m_axisBox->currentData().toInt())); });
    connect(m_slider, &QSlider::valueChanged, this, &VolumeView::setSlice);
    connect(m_channelBox, &QSpinBox::valueChanged, this, &VolumeView::setChannel);
    connect(m_grid, &FeatureMapGrid::clicked, this, &VolumeView::onSliceClicked);
    connect(m_grid, &FeatureMapGrid::hovered, this, [this](int channel, int row, int col, float value) {
        if (m_mode == Mode::Projection) {
            const int64_t at = argmaxAlong(m_volume, channel, m_axis, row, col);
            Q_EMIT hovered(tr("max along %1 of %2 = %3 (at %1 %4)")
                               .arg(axisName(m_axis), voxelText(channel, voxelOf(m_axis, at, row, col)))
                               .arg(double(value), 0, 'g', 6)
                               .arg(at));
            return;
        }
        Q_EMIT hovered(
            voxelText(channel, voxelOf(m_axis, slice(), row, col)) + tr(" · value %1").arg(double(value), 0, 'g', 6));
    });
    syncControls();
    render();
}

QString VolumeView::voxelText(int channel, std::array<int64_t, 3> v) const
{
    return tr("channel %1 · d %2 · h %3 · w %4").arg(channel).arg(v[0]).arg(v[1]).arg(v[2]);
}

void VolumeView::setVolume(VolumeSet volume)
{
    m_volume = std::move(volume);
    const std::array<int64_t, 3> dims { m_volume.depth, m_volume.height, m_volume.width };
    for (size_t i = 0; i < 3; ++i)
        m_point[i] = m_havePoint ? std::clamp<int64_t>(m_point[i], 0, std::max<int64_t>(0, dims[i] - 1)) : dims[i] / 2;
    m_havePoint = !m_volume.empty();
    m_channel = int(std::clamp<int64_t>(m_channel, 0, std::max<int64_t>(0, m_volume.channels - 1)));
    syncControls();
    render();
}

void VolumeView::clear(const QString& message)
{
    m_volume = {};
    m_grid->clear(message);
    for (FeatureMapGrid* g : m_cuts)
        g->clear(QString());
    m_caption->clear();
    syncControls();
}

void VolumeView::setMode(Mode mode)
{
    if (mode == m_mode)
        return;
    m_mode = mode;
    syncControls();
    render();
    Q_EMIT viewChanged();
}

void VolumeView::setAxis(VolumeAxis axis)
{
    if (axis == m_axis)
        return;
    m_axis = axis;
    syncControls();
    render();
    Q_EMIT viewChanged();
}

void VolumeView::setSlice(int index)
{
    const int64_t clamped = std::clamp<int64_t>(index, 0, std::max<int64_t>(0, m_volume.length(m_axis) - 1));
    if (clamped == m_point[size_t(m_axis)])
        return;
    m_point[size_t(m_axis)] = clamped;
    syncControls();
    render();
    Q_EMIT viewChanged();
}

void VolumeView::setChannel(int channel)
{
    const int clamped = int(std::clamp<int64_t>(channel, 0, std::max<int64_t>(0, m_volume.channels - 1)));
    if (clamped == m_channel)
        return;
    m_channel = clamped;
    syncControls();
    render();
}

void VolumeView::setPoint(int64_t d, int64_t h, int64_t w)
{
    const std::array<int64_t, 3> dims { m_volume.depth, m_volume.height, m_volume.width };
    const std::array<int64_t, 3> want { d, h, w };
    for (size_t i = 0; i < 3; ++i)
        m_point[i] = std::clamp<int64_t>(want[i], 0, std::max<int64_t>(0, dims[i] - 1));
    syncControls();
    render();
    Q_EMIT viewChanged();
}

void VolumeView::setColorMap(ColorMapKind kind)
{
    m_grid->setColorMap(kind);
    for (FeatureMapGrid* g : m_cuts)
        g->setColorMap(kind);
}

void VolumeView::setSharedRange(bool shared)
{
    if (shared == m_shared)
        return;
    m_shared = shared;
    render();
}

// The controls follow the state without echoing back into the setters.
void VolumeView::syncControls()
{
    const QSignalBlocker b1(m_modeBox), b2(m_axisBox), b3(m_slider), b4(m_channelBox);
    m_modeBox->setCurrentIndex(m_modeBox->findData(int(m_mode)));
    m_axisBox->setCurrentIndex(m_axisBox->findData(int(m_axis)));
    const int64_t length = m_volume.length(m_axis);
    m_slider->setRange(0, int(std::max<int64_t>(0, length - 1)));
    m_slider->setValue(slice());
    // A projection covers the whole axis: the slider has nothing to choose.
    const bool indexed = m_mode != Mode::Projection && !m_volume.empty();
    m_slider->setEnabled(indexed);
    m_sliceLabel->setText(
        indexed ? QStringLiteral("%1 %2/%3").arg(axisName(m_axis)).arg(slice()).arg(length - 1) : QString());
    m_channelBox->setRange(0, int(std::max<int64_t>(0, m_volume.channels - 1)));
    m_channelBox->setValue(m_channel);
    m_channelBox->setVisible(m_mode == Mode::Orthogonal);
    m_stack->setCurrentIndex(m_mode == Mode::Orthogonal ? 1 : 0);
}

QString VolumeView::caption() const { return m_caption->text(); }

void VolumeView::render()
{
    if (m_volume.empty())
        return;
    const QString dims = QStringLiteral("D×H×W %1×%2×%3").arg(m_volume.depth).arg(m_volume.height).arg(m_volume.width);
    switch (m_mode) {
    case Mode::Slices:
        m_grid->setPlanes(sliceOf(m_volume, m_axis, slice(), m_shared));
        m_caption->setText(tr("slice %1 = %2 of 0…%3 · %4 · %5 per tile")
                               .arg(axisName(m_axis))
                               .arg(slice())
                               .arg(m_volume.length(m_axis) - 1)
                               .arg(dims, cutAxesText(m_axis)));
        break;
    case Mode::Projection:
        m_grid->setPlanes(maxProjection(m_volume, m_axis, m_shared));
        m_caption->setText(tr("maximum along %1 (all %2 slices) · %3 · %4 per tile")
                               .arg(axisName(m_axis))
                               .arg(m_volume.length(m_axis))
                               .arg(dims, cutAxesText(m_axis)));
        break;
    case Mode::Orthogonal:
        for (VolumeAxis a : kVolumeAxes) {
            const auto i = size_t(a);
            PlaneSet cut = sliceOf(m_volume, a, m_point[i], m_shared, m_channel);
            m_cuts[i]->setPlanes(std::move(cut));
            // The voxel in this cut: its two in-plane coordinates.
            const int row = int(a == VolumeAxis::D ? m_point[1] : m_point[0]);
            const int col = int(a == VolumeAxis::W ? m_point[1] : m_point[2]);
            m_cuts[i]->setMarkedPixel(row, col);
            m_cutTitles[i]->setText(tr("%1 = %2 (%3)").arg(axisName(a)).arg(m_point[i]).arg(cutAxesText(a)));
        }
        m_caption->setText(tr("channel %1 cut through voxel d %2 · h %3 · w %4 · %5")
                               .arg(m_channel)
                               .arg(m_point[0])
                               .arg(m_point[1])
                               .arg(m_point[2])
                               .arg(dims));
        break;
    }
}

void VolumeView::onSliceClicked(int, int channel, int row, int col)
{
    const int64_t along = m_mode == Mode::Projection ? argmaxAlong(m_volume, channel, m_axis, row, col) : slice();
    const auto v = voxelOf(m_axis, along, row, col);
    m_channel = channel;
    m_mode = Mode::Orthogonal;
    setPoint(v[0], v[1], v[2]); // renders the orthogonal view and tells the panel
}

void VolumeView::onCutClicked(VolumeAxis cutAlong, int row, int col)
{
    const auto v = voxelOf(cutAlong, m_point[size_t(cutAlong)], row, col);
    setPoint(v[0], v[1], v[2]);
}

} // namespace convscope::gui
