#include "gui/pages/interpolation_panel.h"

#include "gui/document/network_document.h"
#include "gui/views/feature_map_grid.h"
#include "gui/views/format.h"

#include <QComboBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>

namespace convscope::gui {

namespace {
    // What each strip tile shows of one decoded item: a projection or the middle slice along an axis.
    struct StripView {
        const char* label;
        bool projection;
        VolumeAxis axis;
    };
    // The strip is one row of tiles at least this large, scrolling sideways in a narrow dock and growing with a wide
    // one (11 steps squeezed into the dock's width were tiles of a few pixels).
    constexpr int kMinTile = 96;
    constexpr int kTileRoom = kMinTile + 4 + 14 + 8; // a tile, its gap, its label and a margin

    constexpr StripView kStripViews[] = {
        { "Max projection along D", true, VolumeAxis::D },
        { "Max projection along H", true, VolumeAxis::H },
        { "Max projection along W", true, VolumeAxis::W },
        { "Middle slice along D", false, VolumeAxis::D },
        { "Middle slice along H", false, VolumeAxis::H },
        { "Middle slice along W", false, VolumeAxis::W },
    };
} // namespace

InterpolationPanel::InterpolationPanel(Engine* engine, const NetworkDocument* document, QWidget* parent)
    : QWidget(parent)
    , m_engine(engine)
    , m_document(document)
    , m_at(new QComboBox(this))
    , m_from(new QLineEdit(QStringLiteral("sample:voxels:chair"), this))
    , m_to(new QLineEdit(QStringLiteral("sample:voxels:sphere"), this))
    , m_steps(new QSpinBox(this))
    , m_go(new QPushButton(tr("Interpolate"), this))
    , m_selection(new QComboBox(this))
    , m_view(new QComboBox(this))
    , m_caption(new QLabel(this))
    , m_strip(new FeatureMapGrid)
    , m_stripScroll(new QScrollArea(this))
    , m_table(new QTableWidget(0, 4, this))
    , m_message(new QLabel(this))
{
    setObjectName(QStringLiteral("interpolationPanel"));
    m_at->setObjectName(QStringLiteral("interpolationLatent"));
    m_at->setToolTip(tr("The layer whose output is the latent: the encoder ends there, the decoder starts after it"));
    m_from->setToolTip(tr("First input: sample:voxels:sphere, :torus, :cube, :chair, an .npy file or random:SEED"));
    m_to->setToolTip(tr("Second input, as the first"));
    m_steps->setRange(2, 101);
    m_steps->setValue(11);
    m_steps->setToolTip(tr("Blends from t = 0 to t = 1"));
    m_go->setToolTip(tr("Encode both inputs, blend the latents and decode every blend, batched and one by one, on "
                        "the selections checked in the Run panel"));
    m_selection->setObjectName(QStringLiteral("interpolationSelection"));
    for (const StripView& v : kStripViews)
        m_view->addItem(tr(v.label));
    m_view->setObjectName(QStringLiteral("interpolationView"));
    m_strip->setObjectName(QStringLiteral("interpolationStrip"));
    m_strip->clear(tr("Decoded volumes along t appear here after Interpolate."));
    m_caption->setWordWrap(true);
    m_message->setWordWrap(true);
    m_message->setObjectName(QStringLiteral("interpolationMessage"));
    m_table->setObjectName(QStringLiteral("interpolationTiming"));
    m_table->setHorizontalHeaderLabels(
        { tr("Encoder (2 inputs)"), tr("Decoder, one batch"), tr("Decoder, one by one"), tr("Batching speed-up") });
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setMaximumHeight(130);
    m_table->setMinimumWidth(120);
    m_caption->setMinimumWidth(1);
    m_caption->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    m_message->setMinimumWidth(1);
    m_message->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);

    // Short rows, and combo boxes and fields that may shrink: this page shares the right dock area with the timing
    // chart, and a wide row would widen the whole window (the screenshot test pins its size).
    for (QComboBox* c : { m_at, m_selection, m_view }) {
        c->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
        c->setMinimumContentsLength(6);
    }
    for (QLineEdit* e : { m_from, m_to })
        e->setMinimumWidth(60);
    auto* fields = new QHBoxLayout;
    fields->addWidget(new QLabel(tr("Latent at"), this));
    fields->addWidget(m_at, 1);
    fields->addWidget(new QLabel(tr("steps"), this));
    fields->addWidget(m_steps);
    fields->addWidget(m_go);
    auto* inputs = new QHBoxLayout;
    inputs->addWidget(new QLabel(tr("from"), this));
    inputs->addWidget(m_from, 1);
    inputs->addWidget(new QLabel(tr("to"), this));
    inputs->addWidget(m_to, 1);
    auto* show = new QHBoxLayout;
    show->addWidget(new QLabel(tr("Decoded by"), this));
    show->addWidget(m_selection, 1);
    show->addWidget(m_view, 1);
    auto* box = new QVBoxLayout(this);
    box->setContentsMargins(4, 4, 4, 4);
    box->addLayout(fields);
    box->addLayout(inputs);
    box->addLayout(show);
    box->addWidget(m_caption);
    m_strip->setSingleRow(true);
    m_stripScroll->setObjectName(QStringLiteral("interpolationStripScroll"));
    m_stripScroll->setWidget(m_strip);
    m_stripScroll->setWidgetResizable(true);
    m_stripScroll->setFrameShape(QFrame::NoFrame);
    m_stripScroll->setMinimumHeight(kTileRoom + 24); // room for a row of tiles and the scroll bar
    box->addWidget(m_stripScroll, 1);
    box->addWidget(m_table);
    box->addWidget(m_message);

    connect(m_go, &QPushButton::clicked, this, &InterpolationPanel::start);
    connect(m_selection, &QComboBox::currentIndexChanged, this, &InterpolationPanel::showStrip);
    connect(m_view, &QComboBox::currentIndexChanged, this, &InterpolationPanel::showStrip);
    connect(m_document, &NetworkDocument::networkChanged, this, &InterpolationPanel::refreshLayers);
    connect(m_engine, &Engine::interpolationFinished, this, [this](int job, InterpolationResultPtr r) {
        if (job != m_job)
            return;
        m_job = 0;
        m_go->setEnabled(true);
        setResult(std::move(r));
    });
    connect(m_engine, &Engine::failed, this, [this](int job, const QString& why) {
        if (job != m_job)
            return;
        m_job = 0;
        m_go->setEnabled(true);
        m_message->setText(why);
    });
    connect(m_engine, &Engine::started, this, [this](int job, bool) {
        if (m_job && job != m_job) { // a run or sweep superseded this interpolation
            m_job = 0;
            m_go->setEnabled(true);
            m_message->setText(tr("Superseded by another run."));
        }
    });
    refreshLayers();
}

QString InterpolationPanel::message() const { return m_message->text(); }
QString InterpolationPanel::caption() const { return m_caption->text(); }

// The layers to cut at: every layer but the last; "latent" chosen when the network has one (the lecture's name).
void InterpolationPanel::refreshLayers()
{
    const QString keep = m_at->currentText();
    const QSignalBlocker block(m_at);
    m_at->clear();
    const auto& layers = m_document->network().layers;
    for (size_t i = 0; i + 1 < layers.size(); ++i)
        m_at->addItem(QString::fromStdString(layers[i].name));
    int pick = m_at->findText(keep);
    if (pick < 0)
        pick = m_at->findText(QStringLiteral("latent"));
    m_at->setCurrentIndex(std::max(pick, 0));
}

int InterpolationPanel::start()
{
    InterpolationRequest r;
    r.at = m_at->currentText().toStdString();
    r.from = m_from->text().trimmed().toStdString();
    r.to = m_to->text().trimmed().toStdString();
    r.steps = m_steps->value();
    r.run = m_engine->runSettings().request();
    if (r.at.empty() || r.from.empty() || r.to.empty()) {
        m_message->setText(tr("Choose the latent layer and both inputs first."));
        return 0;
    }
    m_message->setText(tr("Interpolating on %n selection(s)…", nullptr, int(r.run.selections.size())));
    m_job = m_engine->startInterpolation(m_document->network(), r);
    m_go->setEnabled(m_job == 0);
    return m_job;
}

void InterpolationPanel::setResult(InterpolationResultPtr result)
{
    m_result = std::move(result);
    const QSignalBlocker block(m_selection);
    m_selection->clear();
    m_table->setRowCount(0);
    QStringList failures;
    if (!m_result) { // another network: nothing of the last one's interpolation stays
        m_message->clear();
        m_strip->setMinimumSize(0, 0);
        m_strip->clear(tr("Interpolate to see the decoded blends here."));
        m_caption->clear();
        return;
    }
    for (size_t i = 0; i < m_result->runs.size(); ++i) {
        const InterpolationRun& run = m_result->runs[i];
        const QString name = QString::fromStdString(run.selection.str());
        if (!run.ok) {
            failures << name + QStringLiteral(": ") + QString::fromStdString(run.failure);
            continue;
        }
        m_selection->addItem(name, int(i));
        const int row = m_table->rowCount();
        m_table->insertRow(row);
        m_table->setVerticalHeaderItem(row, new QTableWidgetItem(name));
        double batched = -1, single = -1;
        for (const DecodeResult& d : run.decodes)
            (d.mode == DecodeMode::Batched ? batched : single) = d.ms.median;
        const QStringList cells { formatMs(run.encoderMs.median), batched >= 0 ? formatMs(batched) : QString(),
            single >= 0 ? formatMs(single) : QString(),
            batched > 0 && single >= 0 ? QStringLiteral("%1×").arg(single / batched, 0, 'f', 2) : QString() };
        for (int c = 0; c < cells.size(); ++c) {
            auto* item = new QTableWidgetItem(cells[c]);
            item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
            m_table->setItem(row, c, item);
        }
    }
    m_message->setText(failures.isEmpty() ? tr("Decoder times cover every step; medians of the timed runs.")
                                          : failures.join(QLatin1Char('\n')));
    showStrip();
}

void InterpolationPanel::showStrip()
{
    if (!m_result || m_selection->count() == 0) {
        m_strip->setMinimumSize(0, 0);
        m_strip->clear(tr("No selection decoded the blends."));
        m_caption->clear();
        return;
    }
    const InterpolationRun& run = m_result->runs[size_t(m_selection->currentData().toInt())];
    const DecodeResult* decoded = nullptr;
    for (const DecodeResult& d : run.decodes)
        if (!decoded || d.mode == DecodeMode::Batched)
            decoded = &d;
    const Tensor& t = decoded->decoded;
    const StripView& view = kStripViews[std::clamp(m_view->currentIndex(), 0, int(std::size(kStripViews)) - 1)];
    // One tile per step: channel 0 of item k, cut or projected.
    PlaneSet strip;
    for (int64_t k = 0; k < t.shape().n; ++k) {
        PlaneSet one;
        if (t.shape().isVolume()) {
            const VolumeSet v = volumeOf(t, k);
            one = view.projection ? maxProjection(v, view.axis, true)
                                  : sliceOf(v, view.axis, v.length(view.axis) / 2, true, 0);
        } else {
            one = planesOf(t, k);
        }
        if (one.empty())
            continue;
        strip.height = one.height;
        strip.width = one.width;
        strip.values.insert(strip.values.end(), one.plane(0), one.plane(0) + one.height * one.width);
        strip.channelIds.push_back(int(k));
        ++strip.channels;
    }
    // One tile per t, each at least kMinTile pixels, labelled with its t.
    const auto& ts = m_result->ts;
    const int tiles = int(strip.channels);
    QStringList labels;
    for (int k = 0; k < tiles; ++k)
        labels << tr("t = %1").arg(size_t(k) < ts.size() ? ts[size_t(k)] : 0.0, 0, 'g', 3);
    m_strip->setMinimumSize(tiles * (kMinTile + 4) + 8, kMinTile + 14 + 12);
    m_strip->setPlanes(std::move(strip));
    m_strip->setTileLabels(labels);
    m_caption->setText(tr("%1 · %2 tiles, t = %3 … %4 (new_z = (1 − t)·z1 + t·z2, latent %5), decoded as one "
                          "batch; %6, channel 0")
                           .arg(QString::fromStdString(run.selection.str()))
                           .arg(tiles)
                           .arg(ts.empty() ? 0.0 : ts.front(), 0, 'g', 3)
                           .arg(ts.empty() ? 1.0 : ts.back(), 0, 'g', 3)
                           .arg(QString::fromStdString(m_result->split.latent.str()), tr(view.label).toLower()));
}

} // namespace convscope::gui
