#include "gui/pages/sweep_panel.h"

#include "compute/backend_registry.h"
#include "gui/charts/sweep_chart.h"

#include <QCheckBox>
#include <QComboBox>
#include <QGridLayout>
#include <QLabel>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>

namespace convscope::gui {

SweepPanel::SweepPanel(Engine* engine, QWidget* parent)
    : QWidget(parent)
    , m_preset(new QComboBox(this))
    , m_layer(new QSpinBox(this))
    , m_parameter(new QComboBox(this))
    , m_from(new QSpinBox(this))
    , m_to(new QSpinBox(this))
    , m_step(new QSpinBox(this))
    , m_doubling(new QCheckBox(tr("×2 steps"), this))
    , m_sweep(new QPushButton(tr("Sweep"), this))
    , m_cancel(new QPushButton(tr("Cancel"), this))
    , m_message(new QLabel(this))
    , m_selections(new QLabel(this))
    , m_chart(new SweepChart(this))
    , m_engine(engine)
{
    auto* box = new QVBoxLayout(this);
    box->setContentsMargins(4, 4, 4, 4);
    auto* grid = new QGridLayout;
    m_preset->setObjectName(QStringLiteral("sweepPreset"));
    m_preset->addItem(tr("Custom: one parameter of the current network"), QString());
    m_preset->addItem(tr("U-Net encoder channel sweep"), QStringLiteral("unet-channels"));
    m_preset->addItem(tr("GPU vs CPU crossover as the input grows"), QStringLiteral("crossover"));
    m_preset->addItem(tr("Time vs kernel size, large image"), QStringLiteral("kernel-size"));
    for (QComboBox* c : { m_preset, m_parameter }) {
        c->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
        c->setMinimumContentsLength(8);
    }
    grid->addWidget(m_preset, 0, 0, 1, 2);
    m_layer->setRange(0, 999);
    m_layer->setObjectName(QStringLiteral("sweepLayer"));
    for (SweepParameter p : allSweepParameters())
        m_parameter->addItem(QString::fromStdString(sweepParameterName(p)), int(p));
    m_parameter->setObjectName(QStringLiteral("sweepParameter"));
    m_parameter->setCurrentIndex(m_parameter->findData(int(SweepParameter::OutChannels)));
    for (QSpinBox* s : { m_from, m_to, m_step })
        s->setRange(1, 16384);
    m_from->setValue(8);
    m_to->setValue(64);
    m_step->setValue(8);
    m_doubling->setChecked(true);
    m_layer->setPrefix(tr("layer "));
    m_from->setPrefix(tr("from "));
    m_to->setPrefix(tr("to "));
    m_step->setPrefix(tr("step "));
    // Two columns, so the page fits beside the feature maps on a 1366-pixel screen.
    grid->addWidget(m_layer, 1, 0);
    grid->addWidget(m_parameter, 1, 1);
    grid->addWidget(m_from, 2, 0);
    grid->addWidget(m_to, 2, 1);
    grid->addWidget(m_step, 3, 0);
    grid->addWidget(m_doubling, 3, 1);
    grid->setColumnStretch(2, 1);
    box->addLayout(grid);
    auto* buttons = new QHBoxLayout;
    m_sweep->setObjectName(QStringLiteral("sweepButton"));
    m_cancel->setEnabled(false);
    buttons->addWidget(m_sweep);
    buttons->addWidget(m_cancel);
    m_message->setWordWrap(true);
    m_message->setObjectName(QStringLiteral("sweepMessage"));
    buttons->addWidget(m_message, 1);
    box->addLayout(buttons);
    m_selections->setObjectName(QStringLiteral("sweepSelections"));
    m_selections->setWordWrap(true);
    m_selections->setMinimumWidth(1);
    m_selections->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    box->addWidget(m_selections);
    box->addWidget(m_chart, 1);

    connect(m_preset, &QComboBox::currentIndexChanged, this, [this] {
        m_presetPoints.clear();
        updateEnabled();
        // The preset's selections that run here become the run settings (the Run panel shows them checked).
        const auto suggested = availablePresetSelections();
        if (!suggested.empty()) {
            RunSettings s = m_engine->runSettings();
            s.selections = suggested;
            m_engine->setRunSettings(s);
        }
    });
    connect(engine, &Engine::runSettingsChanged, this, &SweepPanel::showSelections);
    showSelections();
    connect(m_doubling, &QCheckBox::toggled, this, &SweepPanel::updateEnabled);
    connect(m_sweep, &QPushButton::clicked, this, &SweepPanel::sweepRequested);
    connect(m_cancel, &QPushButton::clicked, this, &SweepPanel::cancelRequested);
    connect(m_cancel, &QPushButton::clicked, engine, &Engine::cancel);
    connect(engine, &Engine::sweepUpdated, this, [this](int job, SweepResultPtr r, double) {
        if (job == m_job)
            m_chart->setResult(r);
    });
    connect(engine, &Engine::sweepFinished, this, [this](int job, SweepResultPtr r) {
        if (job != m_job)
            return;
        m_chart->setResult(r);
        setRunning(false);
        setMessage(tr("Sweep done: %1 points × %2 selections").arg(r->samples.size()).arg(r->selections.size()));
    });
    connect(engine, &Engine::failed, this, [this](int job, const QString& message) {
        if (job != m_job)
            return;
        setRunning(false);
        setMessage(message);
    });
    updateEnabled();
}

// What a sweep runs on: the engine's run settings, as the Run panel shows them.
void SweepPanel::showSelections()
{
    const RunRequest r = m_engine->runSettings().request();
    QStringList names;
    for (const Selection& sel : r.selections)
        names << QString::fromStdString(sel.str());
    m_selections->setText(names.isEmpty() ? tr("No selection checked in the Run panel: check one to sweep.")
                                          : tr("Sweeps on %1 (%2 warm-ups, %3 repeats: the Run panel's settings)")
                                                .arg(names.join(QStringLiteral(", ")))
                                                .arg(r.warmup)
                                                .arg(r.repeat));
}

QString SweepPanel::selectionsText() const { return m_selections->text(); }

void SweepPanel::updateEnabled()
{
    const bool custom = m_preset->currentData().toString().isEmpty() && !m_readOnly;
    for (QWidget* w : std::initializer_list<QWidget*> { m_layer, m_parameter, m_from, m_to, m_doubling })
        w->setEnabled(custom);
    m_step->setEnabled(custom && !m_doubling->isChecked());
    if (!m_preset->currentData().toString().isEmpty())
        m_message->setText(QString::fromStdString(sweepPreset(m_preset->currentData().toString().toStdString()).note));
}

SweepSpec SweepPanel::spec() const
{
    const QString preset = m_preset->currentData().toString();
    if (!preset.isEmpty())
        return sweepPreset(preset.toStdString(), m_presetPoints.toStdString());
    return SweepSpec::range(size_t(m_layer->value()), SweepParameter(m_parameter->currentData().toInt()),
        m_from->value(), m_to->value(), m_step->value(), m_doubling->isChecked());
}

void SweepPanel::setPreset(const QString& name, const QString& points)
{
    const int i = m_preset->findData(name);
    m_preset->setCurrentIndex(std::max(0, i));
    m_presetPoints = points;
}

void SweepPanel::setRange(int layer, SweepParameter p, int from, int to, int step, bool doubling)
{
    setPreset(QString());
    m_layer->setValue(layer);
    m_parameter->setCurrentIndex(m_parameter->findData(int(p)));
    m_from->setValue(from);
    m_to->setValue(to);
    m_step->setValue(step);
    m_doubling->setChecked(doubling);
}

std::vector<Selection> SweepPanel::availablePresetSelections() const
{
    std::vector<Selection> out;
    const QString preset = m_preset->currentData().toString();
    if (preset.isEmpty())
        return out;
    for (const Selection& s : sweepPreset(preset.toStdString()).selections) {
        auto b = BackendRegistry::instance().find(s.backend);
        if (b && b->availability().available)
            out.push_back(s);
    }
    return out;
}

void SweepPanel::setReadOnly(bool on)
{
    m_readOnly = on;
    m_preset->setEnabled(!on);
    m_sweep->setEnabled(!on);
    updateEnabled();
}

void SweepPanel::setRunning(bool running)
{
    m_sweep->setEnabled(!running && !m_readOnly);
    m_cancel->setEnabled(running);
}

void SweepPanel::setJob(int job)
{
    m_job = job;
    if (job)
        setRunning(true);
}

void SweepPanel::setMessage(const QString& text) { m_message->setText(text); }
QString SweepPanel::message() const { return m_message->text(); }

} // namespace convscope::gui
