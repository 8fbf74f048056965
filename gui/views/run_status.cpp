#include "gui/views/run_status.h"

#include "gui/document/engine.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>

#include <cmath>

namespace convscope::gui {

QString formatSeconds(double seconds)
{
    const int s = int(std::lround(std::max(0.0, seconds)));
    if (s < 60)
        return QObject::tr("%1 s").arg(s);
    if (s < 3600)
        return QObject::tr("%1 min %2 s").arg(s / 60).arg(s % 60);
    return QObject::tr("%1 h %2 min").arg(s / 3600).arg((s % 3600) / 60);
}

RunStatus::RunStatus(Engine* engine, QWidget* parent)
    : QWidget(parent)
    , m_engine(engine)
    , m_label(new QLabel(this))
    , m_bar(new QProgressBar(this))
    , m_cancel(new QPushButton(tr("Cancel"), this))
{
    setObjectName(QStringLiteral("runStatus"));
    auto* box = new QHBoxLayout(this);
    box->setContentsMargins(0, 0, 0, 0);
    box->addWidget(m_label);
    box->addWidget(m_bar);
    box->addWidget(m_cancel);
    // A fixed width, the text elided into it: a status bar that grew with the text widened the whole window.
    m_label->setFixedWidth(m_label->fontMetrics().averageCharWidth() * 56);
    m_bar->setRange(0, 1000);
    m_bar->setMaximumWidth(160);
    m_bar->setMaximumHeight(m_label->fontMetrics().height());
    m_bar->setTextVisible(false);
    m_cancel->setObjectName(QStringLiteral("statusCancel"));
    m_cancel->setToolTip(tr("Cancel the run (Esc)"));
    // Idle, the strip stays and its parts hide keeping their room: a status bar that changed height or width with
    // every run reflowed the views above it.
    for (QWidget* part : std::initializer_list<QWidget*> { m_bar, m_cancel }) {
        QSizePolicy keep = part->sizePolicy();
        keep.setRetainSizeWhenHidden(true);
        part->setSizePolicy(keep);
    }
    stop();
    connect(m_cancel, &QPushButton::clicked, engine, &Engine::cancel);
    connect(engine, &Engine::started, this, [this](int job, bool live) {
        if (live) {
            stop();
            return;
        }
        m_job = job;
        m_clock.start();
        update(0, tr("starting"));
        m_bar->show();
        m_cancel->show();
    });
    // A run says where it is in detail (runProgress, right after progress); a sweep or an interpolation in a line.
    connect(engine, &Engine::progress, this, [this](int job, double f, const QString& what) {
        if (job == m_job)
            update(f, what);
    });
    connect(engine, &Engine::runProgress, this, [this](int job, const RunProgress& where) {
        if (job == m_job)
            update(where.fraction, describe(where));
    });
    connect(engine, &Engine::finished, this, &RunStatus::stop);
    connect(engine, &Engine::failed, this, &RunStatus::stop);
    connect(engine, &Engine::sweepFinished, this, &RunStatus::stop);
    connect(engine, &Engine::interpolationFinished, this, &RunStatus::stop);
}

QString RunStatus::describe(const RunProgress& p)
{
    const QString selection = QString::fromStdString(p.selection);
    QString what = p.pass > 0 ? tr("%1 pass %2/%3%4")
                                    .arg(selection)
                                    .arg(p.pass)
                                    .arg(p.passes)
                                    .arg(p.phase == "warm-up" ? tr(" (warm-up)") : QString())
        : selection.isEmpty() ? QString::fromStdString(p.phase)
                              : tr("%1 %2").arg(QString::fromStdString(p.phase), selection);
    if (p.layer >= 0)
        what = tr("layer %1 of %2 %3 · %4")
                   .arg(p.layer + 1)
                   .arg(p.layers)
                   .arg(QString::fromStdString(p.layerName), what);
    return what;
}

void RunStatus::update(double fraction, const QString& what)
{
    m_bar->setValue(int(fraction * 1000));
    QString left;
    const double elapsed = double(m_clock.elapsed()) / 1000;
    // An estimate only once a little of the run is behind us (the first pass includes planning and warm caches).
    if (fraction > 0.02 && fraction < 1 && elapsed > 0.5)
        left = tr(" · about %1 left").arg(formatSeconds(elapsed / fraction * (1 - fraction)));
    m_text = tr("Running %1 · %2%%3").arg(what).arg(int(fraction * 100)).arg(left);
    m_label->setText(m_label->fontMetrics().elidedText(m_text, Qt::ElideMiddle, m_label->width()));
    m_label->setToolTip(m_text);
}

void RunStatus::stop()
{
    m_job = 0;
    m_bar->hide();
    m_cancel->hide();
    m_label->clear();
    m_text.clear();
    m_bar->setValue(0);
}

QString RunStatus::text() const { return m_text; }
int RunStatus::percent() const { return m_bar->value() / 10; }
bool RunStatus::isActive() const { return !m_cancel->isHidden(); }

} // namespace convscope::gui
