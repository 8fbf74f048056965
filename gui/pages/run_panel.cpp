#include "gui/pages/run_panel.h"

#include "compute/backend_registry.h"
#include "gui/views/flow_layout.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QStyle>
#include <QVBoxLayout>

#include <algorithm>

namespace convscope::gui {

RunPanel::RunPanel(Engine* engine, QWidget* parent)
    : QWidget(parent)
    , m_engine(engine)
    , m_warmup(new QSpinBox(this))
    , m_repeat(new QSpinBox(this))
    , m_live(new QCheckBox(tr("Live preview after every edit"), this))
    , m_explore(new QCheckBox(tr("Explore cuDNN algorithms"), this))
    , m_reference(new QCheckBox(tr("Check every layer against cpu.direct"), this))
    , m_math(new QComboBox(this))
    , m_run(new QPushButton(style()->standardIcon(QStyle::SP_MediaPlay), tr("&Run"), this))
    , m_cancel(new QPushButton(style()->standardIcon(QStyle::SP_MediaStop), tr("Cancel"), this))
    , m_progress(new QProgressBar(this))
    , m_message(new QLabel(this))
{
    auto* box = new QVBoxLayout(this);
    box->setContentsMargins(4, 4, 4, 4);
    auto* group = new QGroupBox(tr("Backends"), this);
    auto* rows = new QVBoxLayout(group);
    // One row per backend: its name, then its algorithms flowing onto as many lines as the dock's width needs (cuDNN
    // has nine, some with long names), and the reason an unavailable one cannot run wrapped under them, whole.
    QFont bold = font();
    bold.setBold(true);
    int nameWidth = 0;
    for (const auto& backend : BackendRegistry::instance().backends())
        nameWidth = std::max(nameWidth, QFontMetrics(bold).horizontalAdvance(QString::fromStdString(backend->name())));
    nameWidth += 12;
    for (const auto& backend : BackendRegistry::instance().backends()) {
        const Availability av = backend->availability();
        const QString name = QString::fromStdString(backend->name());
        auto* label = new QLabel(name, group);
        label->setFont(bold);
        label->setFixedWidth(nameWidth);
        label->setToolTip(QString::fromStdString(backend->description()));
        auto* row = new QHBoxLayout;
        row->addWidget(label, 0, Qt::AlignTop);
        auto* flow = new FlowLayout(nullptr, 10);
        for (const AlgorithmInfo& algo : backend->algorithms()) {
            const QString sel = name + QLatin1Char('.') + QString::fromStdString(algo.name);
            auto* check = new QCheckBox(QString::fromStdString(algo.name), group);
            check->setObjectName(QStringLiteral("select_") + sel);
            check->setEnabled(av.available);
            check->setToolTip(av.available ? QString::fromStdString(algo.description)
                                           : tr("%1 is unavailable: %2").arg(name, QString::fromStdString(av.reason)));
            connect(check, &QCheckBox::toggled, this, &RunPanel::writeSettings);
            m_boxes.insert(sel, check);
            flow->addWidget(check);
        }
        row->addLayout(flow, 1);
        rows->addLayout(row);
        if (backend->algorithms().empty() || !av.available) {
            auto* why = new QLabel(QString::fromStdString(av.reason), group);
            why->setObjectName(QStringLiteral("unavailable_") + name);
            why->setEnabled(false);
            why->setWordWrap(true);
            why->setToolTip(QString::fromStdString(av.reason));
            why->setContentsMargins(nameWidth + rows->spacing(), 0, 0, 4);
            rows->addWidget(why);
        }
    }
    box->addWidget(group);

    m_warmup->setRange(0, 1000);
    m_repeat->setRange(1, 10000);
    // Label and field pairs that wrap as a whole, so the panel stays as narrow as a laptop's dock.
    auto* counts = new FlowLayout(nullptr, 12);
    auto pair = [this, counts](const QString& label, QWidget* field) {
        auto* w = new QWidget(this);
        auto* row = new QHBoxLayout(w);
        row->setContentsMargins(0, 0, 0, 0);
        row->addWidget(new QLabel(label, w));
        row->addWidget(field);
        counts->addWidget(w);
    };
    pair(tr("Warm-ups"), m_warmup);
    pair(tr("Repeats"), m_repeat);
    m_math->addItem(tr("FP32"), int(MathMode::FP32));
    m_math->addItem(tr("TF32"), int(MathMode::TF32));
    m_math->addItem(tr("FP16"), int(MathMode::FP16));
    m_math->addItem(tr("BF16"), int(MathMode::BF16));
    m_math->setObjectName(QStringLiteral("mathMode"));
    m_math->setToolTip(
        tr("FP32 is exact single precision (no Tensor Cores). TF32 rounds convolution and GEMM inputs to "
           "10 bits on Tensor Cores; FP16 and BF16 store every tensor in that format on the GPU (BF16 "
           "also on oneDNN where the CPU has it), with FP32 sums. Errors are against the FP32 reference, "
           "so the |Δ| view shows the rounding. The mode is recorded with every result."));
    pair(tr("Math"), m_math);
    box->addLayout(counts);
    m_explore->setObjectName(QStringLiteral("exploreAlgorithms"));
    m_explore->setToolTip(tr("After timing, ask cuDNN about every algorithm for each conv layer (the Explorer page)"));
    box->addWidget(m_explore);
    m_reference->setObjectName(QStringLiteral("checkReference"));
    m_reference->setToolTip(
        tr("Compare each layer's output with cpu.direct's (double sums): the error columns and the |Δ| view. It is "
           "one more pass on the CPU, which on a large network takes longer than the run (ResNet-50 at batch 1: "
           "about 7 s on 2 cores); switch it off to time big networks quickly."));
    box->addWidget(m_reference);
    m_live->setToolTip(tr("Networks that run within a quarter of a second on this CPU (cpu.tap_gemm, every core) "
                          "rerun after every edit, so the feature maps follow the parameters"));
    m_live->setObjectName(QStringLiteral("livePreview"));
    box->addWidget(m_live);

    auto* buttons = new QHBoxLayout;
    m_run->setObjectName(QStringLiteral("runButton"));
    m_cancel->setObjectName(QStringLiteral("cancelButton"));
    m_cancel->setEnabled(false);
    buttons->addWidget(m_run);
    buttons->addWidget(m_cancel);
    buttons->addWidget(m_progress, 1);
    box->addLayout(buttons);
    m_progress->setRange(0, 1000);
    m_progress->setValue(0);
    m_progress->setTextVisible(false);
    m_message->setWordWrap(true);
    m_message->setObjectName(QStringLiteral("runMessage"));
    m_message->setTextInteractionFlags(Qt::TextSelectableByMouse);
    box->addWidget(m_message);
    box->addStretch(1);

    connect(m_run, &QPushButton::clicked, this, &RunPanel::runRequested);
    connect(m_cancel, &QPushButton::clicked, this, &RunPanel::cancelRequested);
    connect(m_live, &QCheckBox::toggled, this, &RunPanel::liveToggled);
    showSettings();
    for (QSpinBox* spin : { m_warmup, m_repeat })
        connect(spin, &QSpinBox::valueChanged, this, &RunPanel::writeSettings);
    connect(m_explore, &QCheckBox::toggled, this, &RunPanel::writeSettings);
    connect(m_reference, &QCheckBox::toggled, this, &RunPanel::writeSettings);
    connect(m_live, &QCheckBox::toggled, this, &RunPanel::writeSettings);
    connect(m_math, &QComboBox::currentIndexChanged, this, &RunPanel::writeSettings);
    connect(engine, &Engine::runSettingsChanged, this, &RunPanel::showSettings);
    connect(m_cancel, &QPushButton::clicked, engine, &Engine::cancel);
    connect(engine, &Engine::started, this, [this](int, bool live) {
        setRunning(true, live);
        if (!live)
            setMessage(tr("Running…"));
    });
    connect(engine, &Engine::progress, this, [this](int, double f, const QString& what) { setProgress(f, what); });
    connect(engine, &Engine::failed, this, [this](int, const QString& message) {
        setRunning(false, false);
        setMessage(message);
    });
    connect(engine, &Engine::finished, this, [this](int, RunOutcomePtr outcome) { showFinished(*outcome); });
    connect(engine, &Engine::sweepFinished, this, [this](int, SweepResultPtr r) {
        setRunning(false, false);
        setMessage(tr("Sweep done: %1 points × %2 selections").arg(r->samples.size()).arg(r->selections.size()));
    });
    updateRunEnabled();
}

RunRequest RunPanel::request() const { return m_engine->runSettings().request(); }

void RunPanel::writeSettings()
{
    RunSettings s;
    for (auto it = m_boxes.begin(); it != m_boxes.end(); ++it)
        if (it.value()->isChecked() && it.value()->isEnabled())
            s.selections.push_back(Selection::parse(it.key().toStdString()));
    s.warmup = m_warmup->value();
    s.repeat = m_repeat->value();
    s.explore = m_explore->isChecked();
    s.checkReference = m_reference->isChecked();
    s.math = MathMode(m_math->currentData().toInt());
    s.livePreview = m_live->isChecked();
    m_engine->setRunSettings(s);
    updateRunEnabled();
}

// The controls show the settings without writing them back (the signals are blocked): a selection the settings hold
// that this machine cannot run stays unchecked, and is not in the next settings the controls write.
void RunPanel::showSettings()
{
    const RunSettings& s = m_engine->runSettings();
    for (auto it = m_boxes.begin(); it != m_boxes.end(); ++it) {
        const QSignalBlocker block(it.value());
        const Selection sel = Selection::parse(it.key().toStdString());
        it.value()->setChecked(
            it.value()->isEnabled() && std::find(s.selections.begin(), s.selections.end(), sel) != s.selections.end());
    }
    const QSignalBlocker b1(m_warmup), b2(m_repeat), b3(m_explore), b4(m_math), b6(m_reference);
    m_warmup->setValue(s.warmup);
    m_repeat->setValue(s.repeat);
    m_explore->setChecked(s.explore);
    m_reference->setChecked(s.checkReference);
    m_math->setCurrentIndex(m_math->findData(int(s.math)));
    if (m_live->isChecked() != s.livePreview) {
        const QSignalBlocker b5(m_live);
        m_live->setChecked(s.livePreview);
        Q_EMIT liveToggled(s.livePreview);
    }
    updateRunEnabled();
}

bool RunPanel::setSelections(const std::vector<Selection>& selections, QString* why)
{
    for (const Selection& s : selections) {
        QCheckBox* box = m_boxes.value(QString::fromStdString(s.str()));
        if (!box || !box->isEnabled()) {
            if (why)
                *why = box ? box->toolTip() : tr("unknown selection %1").arg(QString::fromStdString(s.str()));
            return false;
        }
    }
    RunSettings settings = m_engine->runSettings();
    settings.selections = selections;
    m_engine->setRunSettings(settings);
    return true;
}

void RunPanel::setWarmupRepeat(int warmup, int repeat)
{
    RunSettings settings = m_engine->runSettings();
    settings.warmup = warmup;
    settings.repeat = repeat;
    m_engine->setRunSettings(settings);
}

bool RunPanel::pin(const Selection& selection)
{
    QString why;
    if (!m_engine->pinSelection(selection, &why)) {
        setMessage(tr("Cannot pin %1: %2").arg(QString::fromStdString(selection.str()), why));
        return false;
    }
    setMessage(tr("%1 pinned: it runs with the next Run").arg(QString::fromStdString(selection.str())));
    return true;
}

void RunPanel::setExplore(bool on) { m_explore->setChecked(on); }
void RunPanel::setMathMode(MathMode m) { m_math->setCurrentIndex(m_math->findData(int(m))); }

bool RunPanel::liveEnabled() const { return m_engine->runSettings().livePreview; }
void RunPanel::setLiveEnabled(bool on) { m_live->setChecked(on); }

void RunPanel::setBlockedReason(const QString& reason)
{
    if (reason == m_blocked)
        return;
    const QString previous = m_blocked.isEmpty() ? QString() : tr("Cannot run: %1").arg(m_blocked);
    if (!reason.isEmpty())
        m_message->setText(tr("Cannot run: %1").arg(reason));
    else if (m_message->text() == previous)
        m_message->clear();
    m_blocked = reason;
    updateRunEnabled();
}

void RunPanel::setRunning(bool running, bool live)
{
    m_running = running && !live;
    m_cancel->setEnabled(running);
    if (running)
        m_progress->setValue(0);
    else
        m_progress->setValue(m_progress->maximum());
    updateRunEnabled();
}

void RunPanel::setProgress(double fraction, const QString& what)
{
    m_progress->setValue(int(fraction * 1000));
    m_progress->setToolTip(what);
}

// The first line says what ran and how long it took (the window's status bar shows it too); a line per selection
// that did not run follows.
void RunPanel::showFinished(const RunOutcome& outcome)
{
    setRunning(false, outcome.live);
    QStringList failures;
    for (const auto& sel : outcome.result.selections)
        if (!sel.ok)
            failures << tr("%1 did not run: %2")
                            .arg(QString::fromStdString(sel.selection.str()), QString::fromStdString(sel.failure));
    const QString done = outcome.live
        ? tr("Live preview updated (%1 ms)").arg(outcome.wallMs, 0, 'f', 1)
        : tr("Ran %1 in %2 ms")
              .arg(outcome.result.selections.size() == 1
                      ? QString::fromStdString(outcome.result.selections[0].selection.str())
                      : tr("%1 selections").arg(outcome.result.selections.size()))
              .arg(outcome.wallMs, 0, 'f', 1);
    setMessage(failures.isEmpty() ? done : done + QLatin1Char('\n') + failures.join(QLatin1Char('\n')));
}

void RunPanel::setMessage(const QString& text) { m_message->setText(text); }
QString RunPanel::message() const { return m_message->text(); }

void RunPanel::updateRunEnabled()
{
    bool any = false;
    for (QCheckBox* b : m_boxes)
        any = any || (b->isChecked() && b->isEnabled());
    m_run->setEnabled(any && m_blocked.isEmpty());
    m_run->setToolTip(!m_blocked.isEmpty() ? tr("Cannot run: %1").arg(m_blocked)
                                           : (any ? tr("Run every checked selection") : tr("Check a backend first")));
    m_run->setIcon(style()->standardIcon(m_blocked.isEmpty() ? QStyle::SP_MediaPlay : QStyle::SP_MessageBoxWarning));
}

} // namespace convscope::gui
