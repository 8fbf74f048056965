#include "gui/pages/gradients_panel.h"

#include "gui/views/filters_view.h"
#include "gui/views/saliency_view.h"

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QScrollArea>
#include <QSignalBlocker>
#include <QSplitter>
#include <QVBoxLayout>

#include <algorithm>

namespace convscope::gui {

GradientsPanel::GradientsPanel(Engine* engine, QWidget* parent)
    : QWidget(parent)
    , m_selection(new QComboBox(this))
    , m_layer(new QComboBox(this))
    , m_filters(new FiltersView)
    , m_overlay(new QCheckBox(tr("Over the picture"), this))
    , m_saliencyCaption(new QLabel(this))
    , m_saliency(new SaliencyView)
{
    setObjectName(QStringLiteral("gradientsPanel"));
    m_selection->setObjectName(QStringLiteral("gradientsSelection"));
    m_selection->setToolTip(tr("Whose last training step the gradients are"));
    m_layer->setObjectName(QStringLiteral("gradientsLayer"));
    m_layer->setToolTip(tr("The conv layer whose weight gradient is shown (selecting a layer in the window also "
                           "picks it)"));
    // The filters view's parts keep their own names under a prefix, so they never answer for the feature-map pane's.
    m_filters->setObjectName(QStringLiteral("gradientFiltersView"));
    for (QObject* child : m_filters->findChildren<QObject*>())
        if (!child->objectName().isEmpty())
            child->setObjectName(QStringLiteral("gradient_") + child->objectName());
    m_overlay->setObjectName(QStringLiteral("saliencyOverlay"));
    m_overlay->setChecked(true);
    m_overlay->setToolTip(tr("The saliency over the input picture, or alone on black"));
    m_saliencyCaption->setWordWrap(true);
    m_saliencyCaption->setMinimumWidth(1);
    QFont bold = m_saliencyCaption->font();
    bold.setBold(true);
    auto* saliencyTitle = new QLabel(tr("Saliency: |∂L/∂input|"), this);
    saliencyTitle->setFont(bold);

    auto* top = new QWidget;
    auto* topBox = new QVBoxLayout(top);
    topBox->setContentsMargins(0, 0, 0, 0);
    auto* pick = new QHBoxLayout;
    pick->addWidget(new QLabel(tr("Selection"), top));
    pick->addWidget(m_selection, 1);
    pick->addWidget(new QLabel(tr("Layer"), top));
    pick->addWidget(m_layer, 1);
    topBox->addLayout(pick);
    topBox->addWidget(m_filters, 1);

    auto* bottom = new QWidget;
    auto* bottomBox = new QVBoxLayout(bottom);
    bottomBox->setContentsMargins(0, 0, 0, 0);
    auto* head = new QHBoxLayout;
    head->addWidget(saliencyTitle);
    head->addStretch(1);
    head->addWidget(m_overlay);
    bottomBox->addLayout(head);
    bottomBox->addWidget(m_saliencyCaption);
    auto* scroll = new QScrollArea(bottom);
    scroll->setWidget(m_saliency);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    bottomBox->addWidget(scroll, 1);

    auto* split = new QSplitter(Qt::Vertical, this);
    split->addWidget(top);
    split->addWidget(bottom);
    split->setChildrenCollapsible(false);
    split->setStretchFactor(0, 2); // the saliency tiles need the room more than a few small kernels
    split->setStretchFactor(1, 3);
    auto* box = new QVBoxLayout(this);
    box->setContentsMargins(4, 4, 4, 4);
    box->addWidget(split);

    connect(m_selection, &QComboBox::currentIndexChanged, this, &GradientsPanel::showSelection);
    connect(m_layer, &QComboBox::currentIndexChanged, this, &GradientsPanel::showWeightGradient);
    connect(m_overlay, &QCheckBox::toggled, m_saliency, &SaliencyView::setOverlay);
    if (engine)
        connect(engine, &Engine::trainingFinished, this,
            [this](int, const TrainOutcomePtr& outcome) { setTraining(outcome); });
    setTraining(nullptr);
}

QString GradientsPanel::saliencyCaption() const { return m_saliencyCaption->text(); }

const SelectionTraining* GradientsPanel::selected() const
{
    const int i = m_selection->currentIndex();
    if (!m_outcome || i < 0 || size_t(i) >= m_outcome->result.selections.size())
        return nullptr;
    return &m_outcome->result.selections[size_t(i)];
}

void GradientsPanel::setTraining(TrainOutcomePtr outcome)
{
    m_outcome = std::move(outcome);
    {
        const QSignalBlocker a(m_selection), b(m_layer);
        const QString layer = m_layer->currentText();
        m_selection->clear();
        m_layer->clear();
        if (m_outcome) {
            for (const SelectionTraining& sel : m_outcome->result.selections)
                m_selection->addItem(QString::fromStdString(sel.selection.str()));
            const Network& net = m_outcome->result.network;
            for (size_t i = 0; i < net.layers.size(); ++i)
                if (std::holds_alternative<Conv2d>(net.layers[i].spec)
                    || std::holds_alternative<ConvTranspose2d>(net.layers[i].spec))
                    m_layer->addItem(QString::fromStdString(net.layers[i].name), int(i));
            m_layer->setCurrentIndex(std::max(0, m_layer->findText(layer)));
        }
    }
    showSelection();
}

void GradientsPanel::showLayer(int index)
{
    const int at = m_layer->findData(index);
    if (at >= 0)
        m_layer->setCurrentIndex(at);
}

void GradientsPanel::showSelection()
{
    showWeightGradient();
    const SelectionTraining* sel = selected();
    if (!sel) {
        m_saliency->clear(tr("Train a network (the Train page, with the input gradient) to see which input pixels "
                             "the loss depended on."));
        m_saliencyCaption->clear();
        return;
    }
    if (!sel->inputGradient) {
        m_saliency->clear(tr("This training run did not compute the input gradient: check \"Input gradient\" on "
                             "the Train page."));
        m_saliencyCaption->clear();
        return;
    }
    const TrainResult& r = m_outcome->result;
    QStringList captions;
    const Tensor* target = m_outcome->target.get();
    const bool classes = r.options.training.loss == LossKind::CrossEntropy && target;
    for (int64_t n = 0; n < m_outcome->input->shape().n; ++n) {
        if (!classes) {
            captions << tr("item %1").arg(n);
            continue;
        }
        const auto k = size_t(target->data()[n]);
        captions << (k < r.network.labels.size() ? QString::fromStdString(r.network.labels[k]) : tr("class %1").arg(k));
    }
    m_saliency->setData(m_outcome->input, sel->inputGradient, captions);
    m_saliencyCaption->setText(tr("%1, last of %2 steps: each item's |∂L/∂x|, its maximum over the channels, divided "
                                  "by the item's largest; dark red to yellow where the loss depended most on the "
                                  "pixel%3.")
                                   .arg(QString::fromStdString(sel->selection.str()))
                                   .arg(sel->steps.size())
                                   .arg(classes ? tr(" (captions: each item's target class)") : QString()));
}

void GradientsPanel::showWeightGradient()
{
    const SelectionTraining* sel = selected();
    const int layer = m_layer->currentData().isValid() ? m_layer->currentData().toInt() : -1;
    if (!sel || layer < 0 || size_t(layer) >= sel->weightGradients.size() || !sel->weightGradients[size_t(layer)]) {
        m_filters->clear();
        return;
    }
    // The trained network's layer (its kind, groups, what it reads) with the gradient in place of the weights.
    m_filters->setLayer(sel->trained, layer, sel->weightGradients[size_t(layer)].get());
}

} // namespace convscope::gui
