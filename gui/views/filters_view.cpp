#include "gui/views/filters_view.h"

#include <QCheckBox>
#include <QLabel>
#include <QLinearGradient>
#include <QPainter>
#include <QScrollArea>
#include <QScrollBar>
#include <QVBoxLayout>

#include <algorithm>

namespace convscope::gui {

ScaleBar::ScaleBar(QWidget* parent)
    : QWidget(parent)
{
    setObjectName(QStringLiteral("filterScale"));
}

void ScaleBar::setRange(float absMax, bool colour)
{
    m_absMax = absMax;
    m_colour = colour;
    updateGeometry();
    update();
}

QSize ScaleBar::sizeHint() const { return { 200, fontMetrics().height() * 2 + 6 }; }

QSize ScaleBar::minimumSizeHint() const
{
    // Room for the three numbers side by side: "−0.445", "0", "+0.445" never overlap.
    const QString m = QString::number(double(m_absMax), 'g', 3);
    const int text = fontMetrics().horizontalAdvance(QStringLiteral("−%1 0 (R, G, B strips) +%1").arg(m));
    return { text + 24, sizeHint().height() };
}

void ScaleBar::paintEvent(QPaintEvent*)
{
    QPainter p(this);
    const int label = fontMetrics().height();
    const QRect bar(4, 2, width() - 8, height() - label - 4);
    if (m_colour) {
        // What a colour kernel's pixel means: one strip per channel, that channel's weight running from −m to +m
        // while the other two are zero (grey in the middle of each strip).
        const int strip = std::max(2, bar.height() / 3);
        for (int c = 0; c < 3; ++c) {
            QLinearGradient g(bar.topLeft(), bar.topRight());
            auto colour = [c](int v) {
                int rgb[3] = { 128, 128, 128 };
                rgb[c] = v;
                return QColor(rgb[0], rgb[1], rgb[2]);
            };
            g.setColorAt(0, colour(0));
            g.setColorAt(1, colour(255));
            p.fillRect(QRect(bar.left(), bar.top() + c * strip, bar.width(), strip), g);
        }
    } else {
        QLinearGradient g(bar.topLeft(), bar.topRight());
        for (int i = 0; i <= 8; ++i)
            g.setColorAt(i / 8.0, QColor::fromRgb(m_map.at(i / 8.0)));
        p.fillRect(bar, g);
    }
    p.setPen(palette().color(QPalette::Mid));
    p.drawRect(bar.adjusted(0, 0, -1, -1));
    p.setPen(palette().color(QPalette::Text));
    const QRect text(bar.left(), bar.bottom() + 2, bar.width(), label);
    const QString m = QString::number(double(m_absMax), 'g', 3);
    p.drawText(text, Qt::AlignLeft, QStringLiteral("−") + m);
    p.drawText(text, Qt::AlignHCenter, m_colour ? tr("0 (R, G, B strips)") : QStringLiteral("0"));
    p.drawText(text, Qt::AlignRight, QStringLiteral("+") + m);
}

FiltersView::FiltersView(QWidget* parent)
    : QWidget(parent)
    , m_grid(new FilterGrid(this))
    , m_scroll(new QScrollArea(this))
    , m_title(new QLabel(this))
    , m_note(new QLabel(this))
    , m_colour(new QCheckBox(tr("Colour kernels"), this))
    , m_scale(new ScaleBar(this))
    , m_status(new QLabel(this))
{
    setObjectName(QStringLiteral("filtersView"));
    m_grid->setObjectName(QStringLiteral("filterGrid"));
    m_title->setObjectName(QStringLiteral("filtersTitle"));
    m_note->setObjectName(QStringLiteral("filtersNote"));
    m_colour->setObjectName(QStringLiteral("colourKernels"));
    m_colour->setChecked(true);
    m_colour->setToolTip(tr("A first layer on a colour picture: show each output's red, green and blue kernels as "
                            "one colour image (grey = 0), or each kernel on its own on the signed scale"));
    QFont bold = m_title->font();
    bold.setBold(true);
    m_title->setFont(bold);
    for (QLabel* l : { m_title, m_note, m_status }) {
        l->setWordWrap(true);
        l->setMinimumWidth(1);
    }
    m_scroll->setWidget(m_grid);
    m_scroll->setWidgetResizable(true);
    m_scroll->setFrameShape(QFrame::NoFrame);
    m_scroll->setMinimumWidth(120);

    auto* box = new QVBoxLayout(this);
    box->setContentsMargins(0, 0, 0, 0);
    box->addWidget(m_title);
    box->addWidget(m_note);
    box->addWidget(m_colour);
    box->addWidget(m_scroll, 1);
    box->addWidget(m_scale);
    box->addWidget(m_status);

    connect(m_colour, &QCheckBox::toggled, this, [this](bool on) {
        m_grid->setColour(on);
        if (hasFilters())
            describe();
    });
    connect(m_grid, &FilterGrid::hovered, this,
        [this](int, int, int, int, float, const QString& text) { m_status->setText(text); });
    connect(m_grid, &FilterGrid::left, m_status, &QLabel::clear);
    clear();
}

QString FiltersView::titleText() const { return m_title->text(); }
QString FiltersView::noteText() const { return m_note->text(); }
QString FiltersView::statusText() const { return m_status->text(); }

void FiltersView::clear()
{
    m_grid->setFilters({});
    m_title->setText(tr("Filters"));
    m_note->clear();
    m_colour->hide();
    m_status->clear();
    m_scale->setRange(0, false);
}

bool FiltersView::setLayer(const Network& net, int index, const Tensor* gradient)
{
    FilterSet f = filtersOf(net, index, 64, 32, gradient);
    if (f.empty()) {
        clear();
        return false;
    }
    m_colour->setVisible(f.colourable);
    m_grid->setColour(m_colour->isChecked());
    m_grid->setFilters(std::move(f));
    m_status->clear();
    describe();
    // Wide enough to read the kernels (a splitter would otherwise leave a hidden pane a sliver when it comes back),
    // never so wide that the feature maps lose the window: the rest scrolls.
    const int readable = std::min(m_grid->readableWidth(), 340) + m_scroll->verticalScrollBar()->sizeHint().width();
    m_scroll->setMinimumWidth(std::max(120, readable));
    return true;
}

void FiltersView::describe()
{
    const FilterSet& f = m_grid->filters();
    m_title->setText((f.gradient ? tr("Weight gradient of %1") : tr("Filters of %1")).arg(f.layerName));
    // Short enough for a narrow pane: the numbers, then how to read the grid; the longer story is the tooltip.
    QStringList note;
    note << tr("%1 outputs × %2 inputs, %3×%4").arg(f.outChannels).arg(f.inChannels).arg(f.kh).arg(f.kw);
    if (f.groups > 1)
        note << tr("%1 groups").arg(f.groups);
    if (f.shownOut < f.outChannels || f.shownIn < f.inChannels)
        note << tr("first %1 × %2 shown").arg(f.shownOut).arg(f.shownIn);
    const bool colour = m_grid->colourShown();
    note << (colour          ? tr("one colour kernel per output")
            : f.shownIn == 1 ? tr("one kernel per output")
                             : tr("rows: outputs, columns: inputs"));
    m_note->setText(note.join(QStringLiteral(" · ")));
    QString tip = f.gradient
        ? tr("∂L/∂w of every kernel on one scale: blue negative, white zero, red positive (±%1, the layer's largest); "
             "where it is large the step moves the weight most (against its sign).")
              .arg(double(f.absMax), 0, 'g', 3)
        : colour
        ? tr("Each output's red, green and blue kernels as one colour image: grey is zero, a channel's colour "
             "brightens where its weight is positive (±%1 over the layer).")
              .arg(double(f.absMax), 0, 'g', 3)
        : tr("Every kernel on one scale: blue negative, white zero, red positive (±%1, the layer's largest weight), so "
             "kernels compare with each other.")
              .arg(double(f.absMax), 0, 'g', 3);
    if (f.groups > 1)
        tip += tr(" With %1 groups each output sees only the %2 inputs of its group.").arg(f.groups).arg(f.inChannels);
    if (f.transposed)
        tip += tr(" Transposed convolution: each input pixel stamps its kernel onto the output, scaled by its value.");
    m_note->setToolTip(tip);
    m_scale->setRange(f.absMax, colour);
}

} // namespace convscope::gui
