#include "gui/pages/train_panel.h"

#include "compute/stats.h"
#include "compute/training/phase_sums.h"
#include "gui/document/network_document.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>

namespace convscope::gui {

TrainPanel::TrainPanel(Engine* engine, const NetworkDocument* document, QWidget* parent)
    : QWidget(parent)
    , m_engine(engine)
    , m_document(document)
    , m_loss(new QComboBox(this))
    , m_optimizer(new QComboBox(this))
    , m_lr(new QDoubleSpinBox(this))
    , m_momentum(new QDoubleSpinBox(this))
    , m_steps(new QSpinBox(this))
    , m_warmup(new QSpinBox(this))
    , m_target(new QComboBox(this))
    , m_class(new QSpinBox(this))
    , m_value(new QDoubleSpinBox(this))
    , m_file(new QLineEdit(this))
    , m_logits(new QCheckBox(tr("Loss on the logits (leave out the final softmax)"), this))
    , m_inputGradient(new QCheckBox(tr("Input gradient (the saliency map)"), this))
    , m_targetNote(new QLabel(this))
    , m_selections(new QLabel(this))
    , m_go(new QPushButton(tr("Train"), this))
    , m_message(new QLabel(this))
    , m_summary(new QLabel(this))
{
    setObjectName(QStringLiteral("trainPanel"));
    m_loss->setObjectName(QStringLiteral("trainLoss"));
    m_loss->addItem(tr("cross-entropy (ce)"), int(LossKind::CrossEntropy));
    m_loss->addItem(tr("mean squared error (mse)"), int(LossKind::MSE));
    m_loss->addItem(tr("BCE with logits (bce)"), int(LossKind::BCEWithLogits));
    m_loss->setToolTip(tr("PyTorch's nn.CrossEntropyLoss (logits and class indices), nn.MSELoss, "
                          "nn.BCEWithLogitsLoss; reduction 'mean'"));
    m_optimizer->setObjectName(QStringLiteral("trainOptimizer"));
    m_optimizer->addItem(tr("SGD"), int(OptimizerSpec::Kind::SGD));
    m_optimizer->addItem(tr("Adam"), int(OptimizerSpec::Kind::Adam));
    m_optimizer->setToolTip(tr("torch.optim.SGD (momentum, dampening 0) or torch.optim.Adam (betas 0.9, 0.999)"));
    m_lr->setObjectName(QStringLiteral("trainLr"));
    m_lr->setDecimals(6);
    m_lr->setRange(1e-6, 10);
    m_lr->setSingleStep(0.001);
    m_lr->setValue(0.01);
    m_momentum->setObjectName(QStringLiteral("trainMomentum"));
    m_momentum->setDecimals(3);
    m_momentum->setRange(0, 0.999);
    m_momentum->setSingleStep(0.1);
    m_steps->setObjectName(QStringLiteral("trainSteps"));
    m_steps->setRange(1, 1000);
    m_steps->setValue(10);
    m_steps->setToolTip(tr("Timed training steps; every selection starts from the same weights"));
    m_warmup->setObjectName(QStringLiteral("trainWarmup"));
    m_warmup->setRange(0, 100);
    m_warmup->setValue(1);
    m_warmup->setToolTip(tr("Untimed steps first; the weights and the optimizer are reset after them"));
    m_target->setObjectName(QStringLiteral("trainTarget"));
    m_class->setObjectName(QStringLiteral("trainClass"));
    m_value->setObjectName(QStringLiteral("trainValue"));
    m_value->setDecimals(4);
    m_value->setRange(-1e6, 1e6);
    m_file->setObjectName(QStringLiteral("trainTargetFile"));
    m_file->setPlaceholderText(tr("target .npy"));
    m_logits->setObjectName(QStringLiteral("trainLogits"));
    m_logits->setChecked(true);
    m_logits->setToolTip(tr("Cross-entropy and BCE with logits take logits, as PyTorch's do: a classifier file's "
                            "final softmax is left out of what trains"));
    m_inputGradient->setObjectName(QStringLiteral("trainInputGradient"));
    m_inputGradient->setChecked(true);
    m_inputGradient->setToolTip(tr("Also compute ∂L/∂input for the Gradients page's saliency map (the first layer's "
                                   "backward-data, which PyTorch skips for an input without requires_grad)"));
    m_go->setObjectName(QStringLiteral("trainButton"));
    for (QLabel* l : { m_targetNote, m_selections, m_message, m_summary }) {
        l->setWordWrap(true);
        l->setMinimumWidth(1);
        l->setTextInteractionFlags(Qt::TextSelectableByMouse);
    }
    m_summary->setObjectName(QStringLiteral("trainSummary"));

    auto* browse = m_browse = new QToolButton(this);
    browse->setText(QStringLiteral("…"));
    connect(browse, &QToolButton::clicked, this, [this] {
        const QString f = QFileDialog::getOpenFileName(this, tr("Target"), {}, tr("NumPy arrays (*.npy)"));
        if (!f.isEmpty())
            m_file->setText(f);
    });
    auto* targetRow = new QHBoxLayout;
    targetRow->addWidget(m_class);
    targetRow->addWidget(m_value);
    targetRow->addWidget(m_file, 1);
    targetRow->addWidget(browse);
    auto* form = new QFormLayout;
    form->addRow(tr("Loss"), m_loss);
    form->addRow(tr("Optimizer"), m_optimizer);
    form->addRow(tr("Learning rate"), m_lr);
    form->addRow(tr("Momentum"), m_momentum);
    form->addRow(tr("Steps"), m_steps);
    form->addRow(tr("Warm-ups"), m_warmup);
    form->addRow(tr("Target"), m_target);
    form->addRow(QString(), targetRow);
    auto* box = new QVBoxLayout(this);
    box->addLayout(form);
    box->addWidget(m_targetNote);
    box->addWidget(m_logits);
    box->addWidget(m_inputGradient);
    box->addWidget(m_selections);
    box->addWidget(m_go);
    box->addWidget(m_message);
    box->addWidget(m_summary);
    box->addStretch(1);

    connect(m_go, &QPushButton::clicked, this, &TrainPanel::start);
    for (QComboBox* c : { m_loss, m_optimizer, m_target })
        connect(c, &QComboBox::currentIndexChanged, this, &TrainPanel::updateFields);
    connect(m_class, &QSpinBox::valueChanged, this, &TrainPanel::updateFields);
    connect(m_value, &QDoubleSpinBox::valueChanged, this, &TrainPanel::updateFields);
    connect(m_file, &QLineEdit::editingFinished, this, &TrainPanel::updateFields);
    connect(m_logits, &QCheckBox::toggled, this, &TrainPanel::updateFields);
    connect(m_document, &NetworkDocument::networkChanged, this, &TrainPanel::refreshTargets);
    connect(m_document, &NetworkDocument::replacing, this, [this] {
        m_outcome.reset();
        m_job = 0;
        m_message->clear();
        m_summary->clear();
    });
    connect(m_engine, &Engine::runSettingsChanged, this, &TrainPanel::updateFields);
    connect(m_engine, &Engine::trainingFinished, this, [this](int job, const TrainOutcomePtr& outcome) {
        if (job == m_job)
            showOutcome(outcome);
    });
    connect(m_engine, &Engine::failed, this, [this](int job, const QString& why) {
        if (job == m_job && m_job != 0) {
            m_message->setText(tr("Training stopped: %1").arg(why));
            m_job = 0;
        }
    });
    refreshTargets();
}

QString TrainPanel::targetText() const { return m_targetNote->text(); }
QString TrainPanel::message() const { return m_message->text(); }
QString TrainPanel::summary() const { return m_summary->text(); }

void TrainPanel::refreshTargets()
{
    const Network& net = m_document->network();
    const std::optional<ClassOrderedSet> set = classOrderedSet(net);
    {
        const QSignalBlocker block(m_target);
        m_target->clear();
        if (set)
            m_target->addItem(
                tr("classes in order (%1)").arg(QString::fromStdString(set->source)), int(TargetKind::ClassOrdered));
        m_target->addItem(tr("one class for every item"), int(TargetKind::ClassForAll));
        m_target->addItem(tr("one value for every output"), int(TargetKind::ValueForAll));
        m_target->addItem(tr("from an .npy file"), int(TargetKind::NpyFile));
        m_target->setCurrentIndex(0);
    }
    if (set) {
        const QSignalBlocker block(m_loss);
        m_loss->setCurrentIndex(m_loss->findData(int(LossKind::CrossEntropy)));
    }
    const ShapeReport& shapes = m_document->shapes();
    const int64_t classes = shapes.ok() && !shapes.layers.empty() ? shapes.layers.back().out.c : 1;
    m_class->setRange(0, int(std::max<int64_t>(1, classes) - 1));
    m_logits->setVisible(!net.layers.empty() && std::holds_alternative<Softmax>(net.layers.back().spec));
    updateFields();
}

void TrainPanel::updateFields()
{
    const auto kind = TargetKind(m_target->currentData().toInt());
    m_class->setVisible(kind == TargetKind::ClassForAll);
    m_value->setVisible(kind == TargetKind::ValueForAll);
    m_file->setVisible(kind == TargetKind::NpyFile);
    m_browse->setVisible(kind == TargetKind::NpyFile);
    m_momentum->setEnabled(OptimizerSpec::Kind(m_optimizer->currentData().toInt()) == OptimizerSpec::Kind::SGD);
    try {
        const TrainingData d = data();
        m_targetNote->setText(d.description);
        m_go->setEnabled(true);
    } catch (const std::exception& e) {
        m_targetNote->setText(tr("Cannot train: %1").arg(QString::fromUtf8(e.what())));
        m_go->setEnabled(kind == TargetKind::NpyFile); // start() says what is wrong with the file
    }
    QStringList names;
    for (const Selection& s : m_engine->runSettings().request().selections)
        names << QString::fromStdString(s.str());
    const MathMode math = m_engine->runSettings().math;
    m_selections->setText(names.isEmpty()
            ? tr("No selection: check one in the Run panel.")
            : tr("On the Run panel's selections in %1: %2 (one without a training path in that math is left out and "
                 "named)")
                  .arg(QString::fromStdString(mathModeName(math)), names.join(QStringLiteral(", "))));
}

QString TrainPanel::selectionsNote() const { return m_selections->text(); }

TrainingData TrainPanel::data() const
{
    TargetChoice c;
    c.kind = TargetKind(m_target->currentData().toInt());
    c.classIndex = m_class->value();
    c.value = m_value->value();
    c.file = m_file->text();
    c.logits = m_logits->isChecked();
    return trainingData(m_document->network(), LossKind(m_loss->currentData().toInt()), c);
}

TrainRequest TrainPanel::request(const TrainingData& d) const
{
    TrainRequest r;
    r.selections = m_engine->runSettings().request().selections;
    r.training.loss = LossKind(m_loss->currentData().toInt());
    r.training.optimizer.kind = OptimizerSpec::Kind(m_optimizer->currentData().toInt());
    r.training.optimizer.lr = m_lr->value();
    r.training.optimizer.momentum = r.training.optimizer.kind == OptimizerSpec::Kind::SGD ? m_momentum->value() : 0;
    r.training.inputGradient = m_inputGradient->isChecked();
    r.steps = m_steps->value();
    r.warmup = m_warmup->value();
    r.math = m_engine->runSettings().math;
    r.input = d.input;
    r.target = d.target;
    return r;
}

int TrainPanel::start()
{
    TrainingData d;
    try {
        d = data();
        checkOptimizer(request(d).training.optimizer);
    } catch (const std::exception& e) {
        m_message->setText(tr("Cannot train: %1").arg(QString::fromUtf8(e.what())));
        return 0;
    }
    m_job = 0;
    const TrainRequest r = request(d);
    m_message->setText(tr("Training %1 for %2 steps…").arg(QString::fromStdString(d.network.name)).arg(r.steps));
    m_job = m_engine->startTraining(d.network, r);
    return m_job;
}

void TrainPanel::showOutcome(const TrainOutcomePtr& outcome)
{
    m_outcome = outcome;
    m_job = 0;
    const TrainResult& r = outcome->result;
    m_message->setText(tr("Trained %1 in %2 s: the Timing page's training chart has each layer's phases, the "
                          "Gradients page the weight gradients and the saliency map.")
                           .arg(QString::fromStdString(r.network.name))
                           .arg(outcome->wallMs / 1000.0, 0, 'f', 1));
    QStringList lines;
    for (const SelectionTraining& sel : r.selections) {
        std::vector<double> step;
        for (const StepResult& s : sel.steps) {
            step.push_back(s.lossMs + sumPhases(s.layers).total());
        }
        QString line = tr("%1: loss %2 → %3 over %4 steps, %5 ms a step (median)")
                           .arg(QString::fromStdString(sel.selection.str()))
                           .arg(sel.steps.front().loss, 0, 'g', 5)
                           .arg(sel.steps.back().loss, 0, 'g', 5)
                           .arg(sel.steps.size())
                           .arg(Stats::of(step).median, 0, 'g', 4);
        if (&sel != &r.selections.front())
            line += tr("; parameters within %1 (relative L2) of %2's")
                        .arg(sel.maxParamRelL2, 0, 'g', 2)
                        .arg(QString::fromStdString(r.selections.front().selection.str()));
        lines << line;
    }
    for (const auto& [selection, why] : outcome->skipped)
        lines << tr("%1 left out: %2").arg(QString::fromStdString(selection.str()), QString::fromStdString(why));
    m_summary->setText(lines.join(QLatin1Char('\n')));
}

} // namespace convscope::gui
