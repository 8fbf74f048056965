#include "gui/charts/training_chart.h"

#include "compute/stats.h"

#include <QComboBox>
#include <QFontMetrics>
#include <QHBoxLayout>
#include <QLabel>

#include <qcustomplot.h>

#include <algorithm>
#include <cmath>

namespace convscope::gui {

namespace {
    // One hue per phase (the forward pass blue, the backward's two halves orange and red, the update green, the loss
    // grey); the second, third… selection the same hues lighter, so a layer's bars read selection by selection.
    QColor trainingPhaseColour(int phase, int selection)
    {
        static const QColor base[5] = { QColor(0x3b, 0x6e, 0xa8), QColor(0xe0, 0x8a, 0x2c), QColor(0xc0, 0x39, 0x2b),
            QColor(0x2e, 0x8b, 0x57), QColor(0x80, 0x80, 0x80) };
        return selection == 0 ? base[phase] : base[phase].lighter(100 + 35 * std::min(selection, 4));
    }

    QColor trainingLineColour(int selection)
    {
        static const QColor colours[] = { QColor(0x3b, 0x6e, 0xa8), QColor(0xe0, 0x8a, 0x2c), QColor(0x2e, 0x8b, 0x57),
            QColor(0xc0, 0x39, 0x2b), QColor(0x7b, 0x4f, 0x9d) };
        return colours[selection % 5];
    }

    // The median of the phase's samples over the steps, 0 when the layer has no such phase (−1 in every step).
    double trainingMedianPhase(const SelectionTraining& sel, size_t layer, int phase)
    {
        std::vector<double> v;
        for (const StepResult& s : sel.steps) {
            const LayerPhaseMs& t = s.layers[layer];
            const double ms = phase == 0 ? t.forward
                : phase == 1             ? t.backwardData
                : phase == 2             ? t.backwardWeights
                                         : t.update;
            if (ms >= 0)
                v.push_back(ms);
        }
        return v.empty() ? 0 : Stats::of(v).median;
    }
} // namespace

const QStringList& TrainingChart::phaseNames()
{
    static const QStringList names { QStringLiteral("forward"), QStringLiteral("backward-data"),
        QStringLiteral("backward-weights"), QStringLiteral("update"), QStringLiteral("loss") };
    return names;
}

TrainingChart::TrainingChart(Engine* engine, QWidget* parent)
    : ChartView(parent)
    , m_modeBox(new QComboBox(this))
{
    setObjectName(QStringLiteral("trainingChart"));
    m_modeBox->setObjectName(QStringLiteral("trainingChartMode"));
    m_modeBox->addItem(tr("phases per layer"), int(Mode::Phases));
    m_modeBox->addItem(tr("loss per step"), int(Mode::Loss));
    m_modeBox->setToolTip(tr("Where a training step's time goes, layer by layer; or the loss after every step"));
    m_controls->addWidget(new QLabel(tr("Show"), this));
    m_controls->addWidget(m_modeBox);
    m_controls->addStretch(1);
    connect(m_modeBox, &QComboBox::currentIndexChanged, this, &TrainingChart::redraw);
    m_plot->legend->setVisible(true);
    m_plot->plotLayout()->insertRow(0);
    m_plot->plotLayout()->addElement(0, 0, m_plot->legend);
    m_plot->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
    m_plot->legend->setBorderPen(Qt::NoPen);
    m_plot->plotLayout()->setRowStretchFactor(0, 0.001);
    if (engine)
        connect(engine, &Engine::trainingFinished, this,
            [this](int, const TrainOutcomePtr& outcome) { setTraining(outcome); });
    redraw();
}

QString TrainingChart::chartTitle() const
{
    return mode() == Mode::Loss ? tr("Training loss per step") : tr("Training step per layer");
}

void TrainingChart::setMode(Mode m) { m_modeBox->setCurrentIndex(m_modeBox->findData(int(m))); }

TrainingChart::Mode TrainingChart::mode() const { return Mode(m_modeBox->currentData().toInt()); }

void TrainingChart::setTraining(TrainOutcomePtr outcome)
{
    m_outcome = std::move(outcome);
    redraw();
}

void TrainingChart::redraw()
{
    m_plot->clearPlottables();
    m_series.clear();
    m_ticks.clear();
    if (!m_outcome || m_outcome->result.selections.empty()) {
        setCaption(tr("Train a network (the Train page) to see each layer's forward, backward-data, "
                      "backward-weights and update times."));
        replot();
        return;
    }
    if (mode() == Mode::Loss)
        drawLoss();
    else
        drawPhases();
    applyFonts();
    replot();
}

void TrainingChart::drawPhases()
{
    const TrainResult& r = m_outcome->result;
    const size_t layers = r.network.layers.size();
    for (const Layer& l : r.network.layers)
        m_ticks << QString::fromStdString(l.name);
    m_ticks << tr("loss");
    const int selections = int(r.selections.size());
    const double width = 0.8 / selections;
    double top = 0;
    for (int j = 0; j < selections; ++j) {
        const SelectionTraining& sel = r.selections[size_t(j)];
        const double offset = (j - (selections - 1) / 2.0) * width;
        std::vector<double> stack(layers + 1, 0.0);
        QCPBars* below = nullptr;
        for (int phase = 0; phase < 5; ++phase) {
            Series s { QString::fromStdString(sel.selection.str()), phaseNames()[phase], {}, {} };
            if (phase < 4)
                for (size_t i = 0; i < layers; ++i) {
                    s.keys << double(i + 1) + offset;
                    s.values << trainingMedianPhase(sel, i, phase);
                    stack[i] += s.values.last();
                }
            else {
                std::vector<double> loss;
                for (const StepResult& st : sel.steps)
                    loss.push_back(st.lossMs);
                s.keys << double(layers + 1) + offset;
                s.values << Stats::of(loss).median;
                stack[layers] += s.values.last();
            }
            auto* bars = new QCPBars(m_plot->xAxis, m_plot->yAxis);
            bars->setName(j == 0 ? phaseNames()[phase] : QString());
            const QColor c = trainingPhaseColour(phase, j);
            bars->setBrush(c);
            bars->setPen(QPen(c.darker(140), lineWidth(0.8)));
            bars->setWidth(width * 0.92);
            bars->setData(s.keys, s.values, true);
            if (below)
                bars->moveAbove(below);
            below = bars;
            if (j > 0)
                bars->removeFromLegend();
            m_series << s;
        }
        top = std::max(top, *std::max_element(stack.begin(), stack.end()));
    }
    // A label every `every` layers, so that slanted labels (each about 1.2 text heights wide) never touch; the
    // loss row is always named. Long names are elided in the middle.
    QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
    const QFontMetrics fm(m_plot->xAxis->tickLabelFont());
    const int room = std::max(600, m_plot->width() - 80);
    const int every = std::max(1, int(std::ceil(m_ticks.size() * fm.height() * 1.2 / room)));
    for (int i = 0; i < m_ticks.size(); ++i)
        if (i % every == 0 || i == m_ticks.size() - 1)
            ticker->addTick(
                double(i + 1), fm.elidedText(m_ticks[i], Qt::ElideMiddle, fm.horizontalAdvance(QLatin1Char('M')) * 14));
    m_plot->xAxis->setTicker(ticker);
    m_plot->xAxis->setTickLabelRotation(m_ticks.size() > 8 ? 60 : 0);
    m_plot->xAxis->setRange(0.4, double(m_ticks.size()) + 0.6);
    m_plot->xAxis->setLabel(tr("layer"));
    m_plot->yAxis->setScaleType(QCPAxis::stLinear);
    m_plot->yAxis->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
    m_plot->yAxis->setRange(0, top > 0 ? top * 1.08 : 1);
    m_plot->yAxis->setLabel(tr("ms per step (medians)"));
    QStringList order;
    for (const SelectionTraining& sel : r.selections)
        order << QString::fromStdString(sel.selection.str());
    setCaption(tr("%1 — training step per layer over %2 steps (loss %3, %4); bars left to right: %5%6")
                   .arg(QString::fromStdString(r.network.name))
                   .arg(r.selections.front().steps.size())
                   .arg(QString::fromStdString(lossKindName(r.options.training.loss)),
                       r.options.training.optimizer.kind == OptimizerSpec::Kind::Adam ? tr("adam") : tr("sgd"),
                       order.join(QStringLiteral(", ")), selections > 1 ? tr(" (lighter)") : QString()));
}

void TrainingChart::drawLoss()
{
    const TrainResult& r = m_outcome->result;
    double lo = 1e300, hi = -1e300;
    int steps = 1;
    for (size_t j = 0; j < r.selections.size(); ++j) {
        const SelectionTraining& sel = r.selections[j];
        Series s { QString::fromStdString(sel.selection.str()), QString(), {}, {} };
        for (size_t k = 0; k < sel.steps.size(); ++k) {
            s.keys << double(k + 1);
            s.values << sel.steps[k].loss;
            lo = std::min(lo, sel.steps[k].loss);
            hi = std::max(hi, sel.steps[k].loss);
        }
        steps = std::max(steps, int(sel.steps.size()));
        auto* g = m_plot->addGraph(m_plot->xAxis, m_plot->yAxis);
        g->setName(s.selection);
        g->setPen(
            QPen(trainingLineColour(int(j)), lineWidth(j == 0 ? 2.0 : 1.5), j == 0 ? Qt::SolidLine : Qt::DashLine));
        g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, 5));
        g->setData(s.keys, s.values, true);
        m_series << s;
    }
    m_plot->xAxis->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
    m_plot->xAxis->setTickLabelRotation(0);
    m_plot->xAxis->setRange(0.5, steps + 0.5);
    m_plot->xAxis->setLabel(tr("step"));
    m_plot->yAxis->setScaleType(QCPAxis::stLinear);
    m_plot->yAxis->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
    const double pad = hi > lo ? (hi - lo) * 0.1 : std::max(1e-6, std::abs(hi) * 0.1);
    m_plot->yAxis->setRange(lo - pad, hi + pad);
    m_plot->yAxis->setLabel(tr("loss (%1)").arg(QString::fromStdString(lossKindName(r.options.training.loss))));
    setCaption(tr("%1 — the loss of each training step (before that step's update)")
                   .arg(QString::fromStdString(r.network.name)));
}

} // namespace convscope::gui
