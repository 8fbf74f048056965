#include "gui/pages/feature_map_panel.h"

#include "compute/report.h"
#include "gui/document/class_prediction.h"
#include "gui/document/network_axes.h"
#include "gui/document/receptive_field.h"
#include "gui/views/axis_picker.h"
#include "gui/views/tensor_plot_view.h"
#include "gui/views/tensor_slices.h"
#include "gui/views/volume_view.h"

#include <QCheckBox>
#include <QComboBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QSplitter>
#include <QStackedWidget>
#include <QVBoxLayout>

#include <cmath>

namespace convscope::gui {

FeatureMapPanel::FeatureMapPanel(QWidget* parent)
    : QWidget(parent)
    , m_selection(new QComboBox(this))
    , m_difference(new QCheckBox(tr("|Δ| vs reference"), this))
    , m_error(new QLabel(this))
    , m_colorMap(new QComboBox(this))
    , m_range(new QComboBox(this))
    , m_batch(new QSpinBox(this))
    , m_title(new QLabel(this))
    , m_status(new QLabel(this))
    , m_inputTitle(new QLabel(tr("Input"), this))
    , m_input(new FeatureMapGrid(this))
    , m_grid(new FeatureMapGrid(this))
    , m_big(new FeatureMapGrid(this))
    , m_volume(new VolumeView(this))
    , m_plot(new TensorPlotView(this))
    , m_picker(new AxisPicker(this))
    , m_axesLine(new QLabel(this))
    , m_filters(new FiltersView(this))
    , m_bigTitle(new QLabel(this))
    , m_back(new QPushButton(tr("← All channels"), this))
    , m_stack(new QStackedWidget(this))
{
    m_selection->setObjectName(QStringLiteral("outputSelection"));
    m_selection->setToolTip(tr("Whose output to show: any selection that ran"));
    m_difference->setObjectName(QStringLiteral("differenceView"));
    m_difference->setToolTip(tr("Show |selection − reference| instead of the output"));
    m_error->setObjectName(QStringLiteral("maxError"));
    // "max |Δ| = … · relL2 … (bound …) ⚠ above the bound" is long: it wraps rather than widening the window (the
    // tooltip repeats it).
    m_error->setWordWrap(true);
    for (auto kind : { ColorMapKind::Viridis, ColorMapKind::Grayscale, ColorMapKind::Diverging })
        m_colorMap->addItem(ColorMap::name(kind), int(kind));
    m_colorMap->setObjectName(QStringLiteral("colorMap"));
    m_range->addItem(tr("Shared range"), true);
    m_range->addItem(tr("Per-channel range"), false);
    m_range->setObjectName(QStringLiteral("valueRange"));
    m_batch->setPrefix(tr("item "));
    m_batch->setToolTip(tr("Which batch item to show"));
    m_batch->setRange(0, 0);
    m_status->setObjectName(QStringLiteral("hoverStatus"));
    for (QComboBox* c : { m_selection, m_colorMap, m_range }) {
        c->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
        c->setMinimumContentsLength(8);
    }
    m_status->setMinimumWidth(1);
    m_status->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    // One line kept whether a read-out shows or not: the first hover used to shrink the grid and move the tiles.
    m_status->setMinimumHeight(m_status->fontMetrics().height());
    m_input->setColorMap(ColorMapKind::Grayscale);
    m_input->setMaxTile(320);
    m_input->setColourComposite(true);
    m_grid->setObjectName(QStringLiteral("featureGrid"));
    m_big->setObjectName(QStringLiteral("enlargedMap"));
    m_input->setObjectName(QStringLiteral("inputMap"));
    QFont bold = m_title->font();
    bold.setBold(true);
    m_title->setFont(bold);
    m_inputTitle->setFont(bold);
    // Titles like "Layer 4 · layer1.0.conv1 · [1, 64, 56, 56] · cpu.tap_gemm" wrap rather than set the panel's
    // minimum width: with a conv layer's filters beside the maps they made the window 1571 px wide at 1366×768.
    m_title->setWordWrap(true);
    m_inputTitle->setWordWrap(true);

    auto* controls = new QHBoxLayout;
    controls->addWidget(new QLabel(tr("Output of"), this));
    controls->addWidget(m_selection);
    controls->addWidget(m_difference);
    controls->addStretch(1);
    controls->addWidget(m_colorMap);
    controls->addWidget(m_range);
    controls->addWidget(m_batch);

    auto* inputBox = new QWidget(this);
    auto* inputLayout = new QVBoxLayout(inputBox);
    inputLayout->setContentsMargins(0, 0, 0, 0);
    inputLayout->addWidget(m_inputTitle);
    inputLayout->addWidget(m_input, 1);
    auto* rfHint = new QLabel(tr("Click an output pixel: the input pixels it depends on stay lit."), inputBox);
    rfHint->setWordWrap(true);
    rfHint->setObjectName(QStringLiteral("receptiveFieldInfo"));
    inputLayout->addWidget(rfHint);

    auto* bigPage = new QWidget(this);
    auto* bigLayout = new QVBoxLayout(bigPage);
    bigLayout->setContentsMargins(0, 0, 0, 0);
    auto* bigBar = new QHBoxLayout;
    bigBar->addWidget(m_back);
    bigBar->addWidget(m_bigTitle, 1);
    bigLayout->addLayout(bigBar);
    bigLayout->addWidget(m_big, 1);
    m_stack->addWidget(m_grid);
    m_stack->addWidget(bigPage);
    // The volume page's controls must not widen the panel for image networks, which never show it.
    m_volume->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Ignored);
    m_stack->addWidget(m_volume);
    m_plot->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Ignored);
    m_stack->addWidget(m_plot);
    m_axesLine->setObjectName(QStringLiteral("axesLine"));
    m_axesLine->setWordWrap(true);
    m_axesLine->hide();
    m_picker->hide();

    auto* mapsBox = new QWidget(this);
    auto* mapsLayout = new QVBoxLayout(mapsBox);
    mapsLayout->setContentsMargins(0, 0, 0, 0);
    mapsLayout->addWidget(m_title);
    m_prediction = new QLabel(this);
    m_prediction->setObjectName(QStringLiteral("prediction"));
    m_prediction->setWordWrap(true);
    m_prediction->setTextFormat(Qt::RichText);
    m_prediction->hide();
    mapsLayout->addWidget(m_prediction);
    // The error line under the maps' title, as wide as they are (in the controls row a word-wrapping label shrank to
    // a narrow column).
    mapsLayout->addWidget(m_error);
    mapsLayout->addWidget(m_axesLine);
    mapsLayout->addWidget(m_picker);
    mapsLayout->addWidget(m_stack, 1);

    auto* splitter = new QSplitter(Qt::Horizontal, this);
    splitter->addWidget(inputBox);
    splitter->addWidget(mapsBox);
    splitter->addWidget(m_filters);
    splitter->setStretchFactor(0, 1);
    splitter->setStretchFactor(1, 3);
    splitter->setStretchFactor(2, 1);
    m_filters->hide();
    splitter->setChildrenCollapsible(false);

    auto* box = new QVBoxLayout(this);
    box->setContentsMargins(4, 4, 4, 4);
    box->addLayout(controls);
    box->addWidget(splitter, 1);
    box->addWidget(m_status);

    // Plain maps read "channel · row · col"; any other view names its axes ("C 5 · H 3 · W 7").
    auto hover = [this](int c, int r, int col, float v) {
        if (m_view.form == OutputForm::FeatureMaps && axesText().isEmpty()) {
            m_status->setText(
                tr("channel %1 · row %2 · col %3 · value %4").arg(c).arg(r).arg(col).arg(double(v), 0, 'g', 6));
            return;
        }
        auto name = [this](int axis) { return QString::fromStdString(m_names.at(size_t(axis)).text(size_t(axis))); };
        QString text = m_view.tiles >= 0 ? tr("%1 %2 · ").arg(name(m_view.tiles)).arg(c) : QString();
        m_status->setText(text
            + tr("%1 %2 · %3 %4 · value %5")
                  .arg(name(m_view.rows))
                  .arg(r)
                  .arg(name(m_view.cols))
                  .arg(col)
                  .arg(double(v), 0, 'g', 6));
    };
    connect(m_grid, &FeatureMapGrid::hovered, this, hover);
    connect(m_big, &FeatureMapGrid::hovered, this, hover);
    connect(m_input, &FeatureMapGrid::hovered, this, [this](int c, int r, int col, float v) {
        m_status->setText(
            tr("input channel %1 · row %2 · col %3 · value %4").arg(c).arg(r).arg(col).arg(double(v), 0, 'g', 6));
    });
    connect(m_grid, &FeatureMapGrid::clicked, this, [this](int, int channel, int row, int col) {
        enlarge(channel); // the channel: a grid of more tiles than it draws starts further on
        pickPixel(row, col);
    });
    connect(m_big, &FeatureMapGrid::clicked, this, [this](int, int, int row, int col) { pickPixel(row, col); });
    connect(m_volume, &VolumeView::hovered, m_status, &QLabel::setText);
    connect(m_plot, &TensorPlotView::hovered, m_status, &QLabel::setText);
    connect(m_picker, &AxisPicker::changed, this, &FeatureMapPanel::refresh);
    // A new size of the grid may fit another number of readable tiles: redraw where that changes what is drawn.
    connect(m_grid, &FeatureMapGrid::resized, this, [this] {
        if (m_tileTotal <= 0)
            return;
        const int64_t page = tilesPerPage(m_mapHeight, m_mapWidth);
        if (std::min(page, m_tileTotal) != std::min(m_tilesPerPage, m_tileTotal))
            refresh();
    });
    connect(m_volume, &VolumeView::viewChanged, this, &FeatureMapPanel::refreshInput);
    connect(m_back, &QPushButton::clicked, this, &FeatureMapPanel::showGrid);
    connect(m_selection, &QComboBox::currentIndexChanged, this, &FeatureMapPanel::refresh);
    connect(m_difference, &QCheckBox::toggled, this, &FeatureMapPanel::refresh);
    connect(m_batch, &QSpinBox::valueChanged, this, &FeatureMapPanel::refresh);
    connect(m_colorMap, &QComboBox::currentIndexChanged, this, [this] {
        const auto kind = ColorMapKind(m_colorMap->currentData().toInt());
        m_grid->setColorMap(kind);
        m_big->setColorMap(kind);
        m_volume->setColorMap(kind);
        m_plot->setColorMap(kind);
    });
    connect(m_range, &QComboBox::currentIndexChanged, this, [this] {
        m_grid->setSharedRange(m_range->currentData().toBool());
        m_volume->setSharedRange(m_range->currentData().toBool());
        m_big->setSharedRange(true);
    });
    refresh();
}

bool FeatureMapPanel::setBatchItem(int item)
{
    if (!m_outcome || item < 0 || item > m_batch->maximum())
        return false;
    m_batch->setValue(item);
    return true;
}

bool FeatureMapPanel::showDifference()
{
    if (!m_difference->isEnabled())
        return false;
    m_difference->setChecked(true);
    return true;
}

int FeatureMapPanel::batchItems() const { return m_outcome ? m_batch->maximum() + 1 : 0; }

QString FeatureMapPanel::statusText() const { return m_status->text(); }
QString FeatureMapPanel::errorText() const { return m_error->text(); }
bool FeatureMapPanel::isEnlarged() const { return m_stack->currentIndex() == 1; }
bool FeatureMapPanel::isVolumeShown() const { return m_stack->currentWidget() == m_volume; }
QWidget* FeatureMapPanel::shownMaps() const { return m_stack; }
bool FeatureMapPanel::isPlotShown() const { return m_stack->currentWidget() == m_plot; }
QString FeatureMapPanel::axesText() const { return m_axesLine->isHidden() ? QString() : m_axesLine->text(); }
QString FeatureMapPanel::titleText() const { return m_title->text(); }

void FeatureMapPanel::setOutcome(RunOutcomePtr outcome)
{
    m_outcome = std::move(outcome);
    m_axes = m_outcome ? layerAxes(m_outcome->network, m_outcome->result.shapes) : std::vector<AxisNames>();
    if (!m_outcome) { // another network: the picked pixel and its receptive field belonged to the last one
        m_pickRow = m_pickCol = -1;
        m_input->setHighlight({}, {});
        m_status->clear();
        showGrid();
    }
    rebuildSelections();
    refresh();
}

void FeatureMapPanel::setLayer(int index)
{
    if (index == m_layer)
        return;
    m_layer = index;
    m_pickRow = m_pickCol = -1;
    m_input->setHighlight({}, {});
    showGrid();
    refresh();
}

void FeatureMapPanel::setLayerProblem(const QString& problem)
{
    if (problem == m_problem)
        return;
    m_problem = problem;
    refresh();
}

void FeatureMapPanel::setStale(bool stale)
{
    if (stale == m_stale)
        return;
    m_stale = stale;
    refresh();
}

void FeatureMapPanel::rebuildSelections()
{
    const QString previous = m_selection->currentText();
    const QSignalBlocker block(m_selection);
    m_selection->clear();
    if (m_outcome) {
        const auto& sels = m_outcome->result.selections;
        for (size_t i = 0; i < sels.size(); ++i)
            if (sels[i].ok)
                m_selection->addItem(QString::fromStdString(sels[i].selection.str()), int(i));
        m_batch->setRange(0, int(std::max<int64_t>(1, m_outcome->input.shape().n) - 1));
    }
    const int keep = m_selection->findText(previous);
    m_selection->setCurrentIndex(keep >= 0 ? keep : 0);
    m_difference->setEnabled(m_selection->count() > 1);
    if (m_selection->count() <= 1)
        m_difference->setChecked(false);
}

const Tensor* FeatureMapPanel::outputOf(int selection) const
{
    if (!m_outcome || selection < 0 || selection >= int(m_outcome->result.selections.size()) || m_layer < 0)
        return nullptr;
    const auto& sel = m_outcome->result.selections[size_t(selection)];
    if (!sel.ok || size_t(m_layer) >= sel.layers.size() || !sel.layers[size_t(m_layer)].output)
        return nullptr;
    return &*sel.layers[size_t(m_layer)].output;
}

// A classifier's output (the last layer's [n, classes], or any layer with as many outputs as the network names
// classes) reads as its five most likely classes.
void FeatureMapPanel::showPrediction(const Tensor& out, int64_t item)
{
    const std::vector<std::string>& labels = m_outcome->network.labels;
    const bool last = m_layer == int(m_outcome->network.layers.size()) - 1;
    const std::vector<ClassScore> top = out.shape().flat && (last || int64_t(labels.size()) == out.shape().c)
        ? topClasses(out, item, labels)
        : std::vector<ClassScore>();
    if (top.empty()) {
        m_prediction->hide();
        return;
    }
    QStringList parts;
    for (const ClassScore& c : top)
        parts << (c.label.empty() || c.label == std::to_string(c.index)
                         ? QStringLiteral("%1").arg(c.index)
                         : QStringLiteral("%1 (%2)").arg(QString::fromStdString(c.label).toHtmlEscaped()).arg(c.index))
                + QStringLiteral(" %1 %").arg(100 * c.probability, 0, 'f', 1);
    parts[0] = QStringLiteral("<b>%1</b>").arg(parts[0]);
    m_prediction->setText(tr("Prediction, item %1: %2%3")
                              .arg(item)
                              .arg(parts.join(QStringLiteral(" · ")))
                              .arg(labels.empty() ? tr(" <i>(the network names no classes)</i>") : QString()));
    m_prediction->show();
}

QString FeatureMapPanel::predictionText() const { return m_prediction->isHidden() ? QString() : m_prediction->text(); }

void FeatureMapPanel::enlarge(int tile)
{
    m_enlargedTile = tile;
    m_stack->setCurrentIndex(1);
    refresh();
}

void FeatureMapPanel::showGrid()
{
    m_enlargedTile = -1;
    m_stack->setCurrentIndex(0);
}

void FeatureMapPanel::pickPixel(int row, int col)
{
    m_pickRow = row;
    m_pickCol = col;
    m_big->setMarkedPixel(row, col);
    // The receptive field is traced on images; a volume's view has its own voxel pick.
    if (!m_outcome || m_layer < 0 || m_view.form != OutputForm::FeatureMaps || m_outcome->input.shape().isVolume())
        return;
    const ReceptiveField rf = receptiveField(m_outcome->network, m_outcome->result.shapes, size_t(m_layer), row, col);
    if (!rf.ok) {
        m_input->setHighlight({}, {});
        return;
    }
    m_input->setHighlight(rf.rows, rf.cols);
    m_status->setText(tr("output (%1, %2) depends on %3 × %4 input pixels (%5 in its %6 × %7 span)")
                          .arg(row)
                          .arg(col)
                          .arg(std::count(rf.rows.begin(), rf.rows.end(), true))
                          .arg(std::count(rf.cols.begin(), rf.cols.end(), true))
                          .arg(rf.count())
                          .arg(rf.rowSpan())
                          .arg(rf.colSpan()));
}

// The input beside the maps. A volume input is cut the way the output's volume view is: along the same axis, at
// the same fraction of the way through (a strided layer's output is smaller than its input), or projected.
void FeatureMapPanel::refreshInput()
{
    if (!m_outcome) {
        m_input->clear(tr("The input appears after the first run."));
        return;
    }
    const Tensor& in = m_outcome->input;
    const QString shape = QString::fromStdString(in.shape().str());
    if (!in.shape().isVolume()) {
        if (in.shape().isImage() || in.shape().ndim() == 2) { // an image's channels, or a feature vector's strip
            m_input->setPlanes(planesOf(in, m_batch->value()));
            m_inputTitle->setText(tr("Input %1").arg(shape));
            return;
        }
        // A general tensor: one tile of the axes its view would draw (a rank-3 input's two axes after N), at the
        // batch item and the first index of any other axis.
        const std::vector<int64_t> dims = in.shape().dims();
        const AxisNames names = inputAxes(in.shape());
        const OutputView view = chooseOutputView(dims, names);
        std::vector<int64_t> index(dims.size(), 0);
        if (view.item >= 0)
            index[size_t(view.item)] = m_batch->value();
        m_input->setPlanes(mapsOf(in, view, index, 0, 64));
        m_inputTitle->setText(tr("Input %1").arg(QString::fromStdString(shapeWithAxes(in.shape(), names))));
        return;
    }
    const VolumeSet v = volumeOf(in, std::min<int64_t>(m_batch->value(), in.shape().n - 1));
    const VolumeAxis axis = m_volume->axis();
    if (isVolumeShown() && m_volume->mode() == VolumeView::Mode::Projection) {
        m_input->setPlanes(maxProjection(v, axis, true));
        m_inputTitle->setText(tr("Input %1 · max along %2").arg(shape, axisName(axis)));
        return;
    }
    int64_t index = v.length(axis) / 2;
    const int64_t outLength = m_volume->volume().length(axis);
    if (isVolumeShown() && outLength > 0)
        index = std::min<int64_t>(v.length(axis) - 1, (2 * m_volume->slice() + 1) * v.length(axis) / (2 * outLength));
    m_input->setPlanes(sliceOf(v, axis, index, true));
    m_inputTitle->setText(tr("Input %1 · %2 = %3").arg(shape, axisName(axis)).arg(index));
}

std::vector<int64_t> FeatureMapPanel::shownIndex(const std::vector<int64_t>& dims)
{
    std::vector<int64_t> index(dims.size(), 0);
    if (m_view.item >= 0)
        index[size_t(m_view.item)] = std::min<int64_t>(m_batch->value(), dims[size_t(m_view.item)] - 1);
    for (const int a : m_view.picked)
        index[size_t(a)] = m_picker->index(a);
    return index;
}

int64_t FeatureMapPanel::tilesPerPage(int64_t mapHeight, int64_t mapWidth) const
{
    constexpr int64_t kMaxTiles = 4096; // more would freeze the grid (a tile is an image and a label)
    const int64_t fit = m_grid->tilesThatFit(mapHeight, mapWidth);
    return fit > 0 ? std::min(fit, kMaxTiles) : kMaxTiles;
}

void FeatureMapPanel::refresh()
{
    m_error->clear();
    m_error->setStyleSheet(QString());
    m_error->setToolTip(QString());
    m_aboveBound = false;
    const bool filters
        = m_outcome && m_layer >= 0 && m_problem.isEmpty() && m_filters->setLayer(m_outcome->network, m_layer);
    m_filters->setVisible(filters);
    auto clearMaps = [this](const QString& why) {
        m_prediction->hide();
        m_grid->clear(why);
        m_big->clear(why);
        m_volume->clear(why);
        m_plot->clear(why);
        m_view = {};
        m_tileTotal = 0;
        m_names.clear();
        m_axesLine->hide();
        m_picker->setAxes({});
        if (isVolumeShown() || isPlotShown())
            m_stack->setCurrentIndex(0);
        m_title->setText(QString());
        refreshInput();
    };
    if (!m_problem.isEmpty())
        return clearMaps(tr("This layer cannot run:\n%1").arg(m_problem));
    if (m_layer < 0)
        return clearMaps(tr("Select a layer to see its feature maps."));
    if (!m_outcome)
        return clearMaps(tr("Feature maps appear when the network has run (press Run, or edit a small network)."));
    const int shown = m_selection->currentData().toInt();
    const Tensor* out = outputOf(shown);
    if (!out)
        return clearMaps(tr("No output for this layer yet."));

    // How to draw it: by its rank and its axes' names.
    const std::vector<int64_t> dims = out->shape().dims();
    m_names = size_t(m_layer) < m_axes.size() && m_axes[size_t(m_layer)].size() == dims.size() ? m_axes[size_t(m_layer)]
                                                                                               : unknownAxes(dims);
    m_view = chooseOutputView(dims, m_names);
    const QString described = QString::fromStdString(describeOutputView(m_view, dims, m_names));
    m_axesLine->setText(tr("Shown as %1: %2").arg(QString::fromLatin1(outputFormName(m_view.form)), described));
    m_axesLine->setVisible(!described.isEmpty());
    auto name = [this](int axis) { return QString::fromStdString(m_names[size_t(axis)].text(size_t(axis))); };
    auto label = [&](int axis) { return tr("%1 (axis %2)").arg(name(axis)).arg(axis); };
    std::vector<AxisPicker::Axis> picked;
    for (const int a : m_view.picked)
        picked.push_back({ a, name(a), dims[size_t(a)] });
    const bool grid
        = m_view.form != OutputForm::Volume && m_view.form != OutputForm::HeatMap && m_view.form != OutputForm::Bars;
    m_tileTotal = grid && m_view.tiles >= 0 ? dims[size_t(m_view.tiles)] : 0;
    m_mapHeight = m_view.rows >= 0 ? dims[size_t(m_view.rows)] : 1;
    m_mapWidth = m_view.cols >= 0 ? dims[size_t(m_view.cols)] : 1;
    m_tilesPerPage = tilesPerPage(m_mapHeight, m_mapWidth);
    m_picker->setAxes(picked, m_tileTotal, m_tilesPerPage);
    const std::vector<int64_t> index = shownIndex(dims);

    const QString layerName = m_layer < int(m_outcome->network.layers.size())
        ? QString::fromStdString(m_outcome->network.layers[size_t(m_layer)].name)
        : QString();
    QString title
        = tr("Layer %1 · %2 · %3 · %4")
              .arg(m_layer)
              .arg(layerName, QString::fromStdString(shapeWithAxes(out->shape(), m_names)), m_selection->currentText());
    const int64_t item = std::min<int64_t>(m_batch->value(), out->shape().n - 1);
    const Tensor* ref = nullptr;
    int refSelection = -1;
    if (m_difference->isChecked()) {
        refSelection = referenceSelection();
        ref = outputOf(refSelection);
        if (ref && ref->shape() != out->shape())
            ref = nullptr;
        if (!ref)
            m_error->setText(tr("no reference output"));
    }
    PlaneSet planes;
    VolumeSet voxels;
    if (m_view.form == OutputForm::Volume)
        voxels = volumeOf(*out, item);
    else if (grid)
        planes = mapsOf(*out, m_view, index, m_picker->firstTile(), m_tilesPerPage);
    if (ref) {
        double maxAbs = 0;
        if (grid || m_view.form == OutputForm::Volume) { // the item shown, as the maps show it
            std::vector<float>& values = grid ? planes.values : voxels.values;
            const std::vector<float> rv = grid
                ? mapsOf(*ref, m_view, index, m_picker->firstTile(), m_tilesPerPage).values
                : volumeOf(*ref, item).values;
            for (size_t i = 0; i < values.size(); ++i) {
                values[i] = std::fabs(values[i] - rv[i]);
                maxAbs = std::max(maxAbs, double(values[i]));
            }
        } else { // a heat map or bars: the whole tensor
            for (int64_t i = 0; i < out->numel(); ++i)
                maxAbs = std::max(maxAbs, std::fabs(double(out->data()[i]) - double(ref->data()[i])));
        }
        title = showDifferenceLine(maxAbs, refSelection, shown);
    }
    if (m_stale)
        title += tr("  (before the last edit: press Run)");
    m_title->setText(title);
    showPrediction(*out, item);
    // The receptive-field hint is for image pixels; a volume's clicks open its orthogonal cuts instead.
    if (auto* hint = findChild<QLabel*>(QStringLiteral("receptiveFieldInfo")))
        hint->setVisible(m_view.form == OutputForm::FeatureMaps);
    if (!grid) {
        if (m_view.form == OutputForm::Volume) {
            m_volume->setVolume(std::move(voxels));
            m_stack->setCurrentWidget(m_volume);
        } else {
            if (m_view.form == OutputForm::HeatMap)
                m_plot->setHeatMap(heatMapOf(*out, ref, m_view, index), label(m_view.rows), label(m_view.cols));
            else
                m_plot->setBars(barsOf(*out, ref), label(m_view.cols), ref != nullptr);
            m_stack->setCurrentWidget(m_plot);
        }
        refreshInput();
        Q_EMIT mapsUpdated();
        return;
    }
    if (isVolumeShown() || isPlotShown())
        m_stack->setCurrentIndex(m_enlargedTile >= 0 ? 1 : 0);
    refreshInput();
    const int64_t tile = m_enlargedTile - (planes.channelIds.empty() ? 0 : planes.channelIds.front());
    if (m_enlargedTile >= 0 && tile >= 0 && tile < planes.channels) {
        PlaneSet one;
        one.channels = 1;
        one.height = planes.height;
        one.width = planes.width;
        one.values.assign(planes.plane(tile), planes.plane(tile) + planes.height * planes.width);
        one.channelIds = { m_enlargedTile };
        m_big->setPlanes(std::move(one));
        const QString along = m_view.tiles >= 0 ? name(m_view.tiles) : tr("tile");
        m_bigTitle->setText(m_view.form == OutputForm::FeatureMaps && axesText().isEmpty()
                ? tr("channel %1 of %2").arg(m_enlargedTile).arg(m_view.tiles >= 0 ? dims[size_t(m_view.tiles)] : 1)
                : tr("%1 = %2 of %3")
                      .arg(along)
                      .arg(m_enlargedTile)
                      .arg(m_view.tiles >= 0 ? dims[size_t(m_view.tiles)] : 1));
    }
    // Tiles along an axis other than an image's C say which axis they number ("C₁ 3").
    QStringList tileLabels;
    if (!(m_view.form == OutputForm::FeatureMaps && axesText().isEmpty()) && m_view.tiles >= 0)
        for (const int id : planes.channelIds)
            tileLabels << QStringLiteral("%1 %2").arg(name(m_view.tiles)).arg(id);
    m_grid->setPlanes(std::move(planes));
    m_grid->setTileLabels(tileLabels);
    if (m_pickRow >= 0)
        pickPixel(m_pickRow, m_pickCol);
    Q_EMIT mapsUpdated();
}

} // namespace convscope::gui
