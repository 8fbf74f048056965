#include "gui/views/layer_editor.h"

#include "compute/layer_kinds.h"
#include "gui/views/format.h"
#include "gui/views/param_widgets.h"

#include <QBoxLayout>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QScrollArea>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <concepts>
#include <variant>

// Reads / writes a spec member of whatever layer kind holds it; kinds without it are left alone.
#define CS_SET_MEMBER(member, value)                                                                                   \
    [v = (value)](Layer& l) {                                                                                          \
        std::visit(                                                                                                    \
            [&](auto& s) {                                                                                             \
                if constexpr (requires { s.member = v; })                                                              \
                    s.member = v;                                                                                      \
            },                                                                                                         \
            l.spec);                                                                                                   \
    }
#define CS_HAS_MEMBER(spec, member)                                                                                    \
    std::visit(                                                                                                        \
        [](const auto& s) {                                                                                            \
            return requires { s.member; };                                                                             \
        },                                                                                                             \
        spec)

namespace convscope::gui {

namespace {
    const char* kInitKinds[] = { "default", "uniform", "he_uniform", "xavier_uniform", "constant", "sobel_x", "sobel_y",
        "laplacian", "gaussian_blur", "sharpen", "identity", "box_blur", "random", "file" };

    QSpinBox* spin(int lo, int hi, QWidget* parent)
    {
        auto* s = new QSpinBox(parent);
        s->setRange(lo, hi);
        s->setAccelerated(true);
        return s;
    }
    QDoubleSpinBox* dspin(double lo, double hi, int decimals, QWidget* parent)
    {
        auto* s = new QDoubleSpinBox(parent);
        s->setRange(lo, hi);
        s->setDecimals(decimals);
        s->setSingleStep(std::pow(10.0, -std::min(decimals, 2)));
        return s;
    }
} // namespace

LayerEditor::LayerEditor(NetworkDocument* doc, QWidget* parent)
    : QWidget(parent)
    , m_doc(doc)
    , m_title(new QLabel(this))
    , m_error(new QLabel(this))
    , m_formula(new QLabel(this))
{
    auto* box = new QVBoxLayout(this);
    box->setContentsMargins(4, 4, 4, 4);
    QFont bold = m_title->font();
    bold.setBold(true);
    m_title->setFont(bold);
    box->addWidget(m_title);
    m_error->setWordWrap(true);
    m_error->setObjectName(QStringLiteral("layerError"));
    m_error->setStyleSheet(QStringLiteral("QLabel { color: #b71c1c; background: #ffebee; border: 1px solid #e57373;"
                                          " border-radius: 3px; padding: 4px; }"));
    m_error->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_error->hide();
    box->addWidget(m_error);
    box->addWidget(m_formula);
    m_form = new QWidget(this);
    m_layout = new QFormLayout(m_form);
    m_layout->setContentsMargins(0, 0, 0, 0);
    m_layout->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    box->addWidget(m_form);
    m_formula->setObjectName(QStringLiteral("formula"));
    m_formula->setWordWrap(true);
    m_formula->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_formula->setStyleSheet(QStringLiteral("QLabel { background: palette(alternate-base); padding: 6px;"
                                            " border-radius: 3px; }"));
    QFont mono(QStringLiteral("monospace"));
    mono.setStyleHint(QFont::Monospace);
    m_formula->setFont(mono);
    box->addStretch(1);
    connect(doc, &NetworkDocument::networkChanged, this, [this] { refresh(); });
    // A refused rename (or inputs edit) is said here and the fields go back to what the document holds.
    connect(doc, &NetworkDocument::editRefused, this, [this](const QString& message) {
        const auto& layers = m_doc->network().layers;
        if (m_index < 0 || m_index >= int(layers.size()))
            return;
        if (m_name)
            m_name->setText(QString::fromStdString(layers[size_t(m_index)].name));
        for (const Field& f : m_fields)
            if (f.load && f.key == QLatin1String("inputs"))
                f.load(layers[size_t(m_index)]);
        m_error->setText(QStringLiteral("⚠ ") + message);
        m_error->show();
    });
    rebuild();
}

void LayerEditor::setLayerIndex(int index)
{
    if (index == m_index)
        return;
    m_index = index;
    rebuild();
}

QWidget* LayerEditor::field(const QString& key) const
{
    for (const Field& f : m_fields)
        if (f.key == key)
            return f.widget;
    return nullptr;
}

QString LayerEditor::errorText() const { return m_error->isHidden() ? QString() : m_error->text(); }
QString LayerEditor::formulaText() const { return m_formula->text(); }

void LayerEditor::commit(const QString& key, const QString& text, const std::function<void(Layer&)>& change)
{
    const auto& layers = m_doc->network().layers;
    if (m_index < 0 || m_index >= int(layers.size()))
        return;
    Layer layer = layers[size_t(m_index)];
    change(layer);
    m_doc->setLayer(m_index, layer, text, key);
}

void LayerEditor::addField(const QString& key, const QString& label, QWidget* w, std::function<void(const Layer&)> load)
{
    w->setObjectName(key);
    m_layout->addRow(label, w);
    m_fields.push_back({ key, w, std::move(load) });
}

void LayerEditor::rebuild()
{
    // The fields are built in a fresh, hidden container that is shown whole at the end: widgets added to
    // a visible parent would only appear after the next event-loop pass (and a screenshot taken before
    // it would miss them). The old container may hold the widget whose signal got us here: delete later.
    auto* form = new QWidget(this);
    form->hide();
    auto* layout = new QFormLayout(form);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    delete static_cast<QBoxLayout*>(this->layout())->replaceWidget(m_form, form); // the old item is ours to free
    m_form->hide();
    m_form->deleteLater();
    m_form = form;
    m_layout = layout;
    m_fields.clear();
    m_name = nullptr;
    const auto& layers = m_doc->network().layers;
    if (m_index < 0 || m_index >= int(layers.size())) {
        m_title->setText(
            layers.empty() ? tr("Add a layer from the toolbar or the Layer menu.") : tr("Select a layer."));
        m_type.clear();
        m_formula->hide();
        m_error->hide();
        m_form->show();
        return;
    }
    const Layer& layer = layers[size_t(m_index)];
    m_type = layerTypeName(layer.spec);
    m_formula->show();
    m_name = new QLineEdit(m_form);
    connect(m_name, &QLineEdit::editingFinished, this, [this] {
        const QString name = m_name->text().trimmed();
        if (!name.isEmpty())
            commit(QStringLiteral("name"), tr("Rename layer"), [name](Layer& l) { l.name = name.toStdString(); });
    });
    addField(QStringLiteral("name"), tr("Name"), m_name, [this](const Layer& l) {
        if (!m_name->hasFocus())
            m_name->setText(QString::fromStdString(l.name));
    });
    buildInputFields();
    buildSpecFields(layer.spec);
    if (hasParameters(layer.spec))
        buildInitFields(layer);
    refresh();
    m_form->show();
}

void LayerEditor::buildSpecFields(const LayerSpec& spec)
{
    auto pairField = [&](const QString& key, const QString& label, int lo, auto setter, auto getter) {
        auto* e = new PairEditor(lo, 4096, m_form);
        connect(e, &PairEditor::valueChanged, this, [this, key, label, setter](const Pair& v) {
            commit(key, tr("Change %1").arg(label.toLower()), setter(v));
        });
        addField(key, label, e, [e, getter](const Layer& l) { e->setValue(getter(l)); });
    };
#define CS_PAIR(key, label, lo, member, getexpr)                                                                       \
    if (CS_HAS_MEMBER(spec, member) && !isVolumeLayer(spec))                                                           \
        pairField(                                                                                                     \
            QStringLiteral(key), label, lo,                                                                            \
            [](Pair v) { return std::function<void(Layer&)>(CS_SET_MEMBER(member, v)); },                              \
            [](const Layer& l) {                                                                                       \
                return std::visit(                                                                                     \
                    [](const auto& s) -> Pair {                                                                        \
                        if constexpr (requires {                                                                       \
                                          {                                                                            \
                                              getexpr                                                                  \
                                              } -> std::convertible_to<Pair>;                                          \
                                      })                                                                               \
                            return getexpr;                                                                            \
                        else                                                                                           \
                            return Pair {};                                                                            \
                    },                                                                                                 \
                    l.spec);                                                                                           \
            });
#define CS_INT(key, label, lo, hi, member)                                                                             \
    if (CS_HAS_MEMBER(spec, member)) {                                                                                 \
        auto* e = spin(lo, hi, m_form);                                                                                \
        connect(e, &QSpinBox::valueChanged, this, [this](int v) {                                                      \
            commit(QStringLiteral(key), tr("Change %1").arg(QStringLiteral(key)), CS_SET_MEMBER(member, int64_t(v)));  \
        });                                                                                                            \
        addField(QStringLiteral(key), label, e, [e](const Layer& l) {                                                  \
            std::visit(                                                                                                \
                [e](const auto& s) {                                                                                   \
                    if constexpr (requires { s.member; }) {                                                            \
                        QSignalBlocker b(e);                                                                           \
                        e->setValue(int(s.member));                                                                    \
                    }                                                                                                  \
                },                                                                                                     \
                l.spec);                                                                                               \
        });                                                                                                            \
    }
#define CS_DOUBLE(key, label, lo, hi, decimals, member)                                                                \
    if (CS_HAS_MEMBER(spec, member)) {                                                                                 \
        auto* e = dspin(lo, hi, decimals, m_form);                                                                     \
        connect(e, &QDoubleSpinBox::valueChanged, this, [this](double v) {                                             \
            commit(QStringLiteral(key), tr("Change %1").arg(QStringLiteral(key)), CS_SET_MEMBER(member, v));           \
        });                                                                                                            \
        addField(QStringLiteral(key), label, e, [e](const Layer& l) {                                                  \
            std::visit(                                                                                                \
                [e](const auto& s) {                                                                                   \
                    if constexpr (requires { s.member; }) {                                                            \
                        QSignalBlocker b(e);                                                                           \
                        e->setValue(double(s.member));                                                                 \
                    }                                                                                                  \
                },                                                                                                     \
                l.spec);                                                                                               \
        });                                                                                                            \
    }
#define CS_BOOL(key, label, member)                                                                                    \
    if (CS_HAS_MEMBER(spec, member)) {                                                                                 \
        auto* e = new QCheckBox(m_form);                                                                               \
        connect(e, &QCheckBox::toggled, this, [this](bool v) {                                                         \
            commit(QStringLiteral(key), tr("Change %1").arg(QStringLiteral(key)), CS_SET_MEMBER(member, v));           \
        });                                                                                                            \
        addField(QStringLiteral(key), label, e, [e](const Layer& l) {                                                  \
            std::visit(                                                                                                \
                [e](const auto& s) {                                                                                   \
                    if constexpr (requires { s.member; }) {                                                            \
                        QSignalBlocker b(e);                                                                           \
                        e->setChecked(s.member);                                                                       \
                    }                                                                                                  \
                },                                                                                                     \
                l.spec);                                                                                               \
        });                                                                                                            \
    }

    CS_INT("out_channels", tr("Out channels"), 0, 65536, out_channels)
    CS_INT("out_features", tr("Out features"), 0, 1 << 20, out_features)
    CS_PAIR("kernel_size", tr("Kernel"), 0, kernel_size, s.kernel_size)
    if (CS_HAS_MEMBER(spec, effectiveStride())) {
        CS_PAIR("stride", tr("Stride"), 0, stride, s.effectiveStride())
    } else {
        CS_PAIR("stride", tr("Stride"), 0, stride, s.stride)
    }
    if (isVolumeLayer(spec))
        buildVolumeFields(spec); // kernel, stride, padding, output padding and dilation as D × H × W
    if (CS_HAS_MEMBER(spec, padding) && !std::holds_alternative<Pad>(spec) && !isVolumeLayer(spec)) {
        auto* e = new PaddingEditor(m_form);
        connect(e, &PaddingEditor::valueChanged, this, [this](const Padding2d& p) {
            commit(QStringLiteral("padding"), tr("Change padding"), CS_SET_MEMBER(padding, p));
        });
        addField(QStringLiteral("padding"), tr("Padding"), e, [e](const Layer& l) {
            std::visit(
                [e](const auto& s) {
                    if constexpr (requires { e->setValue(s.padding); })
                        e->setValue(s.padding);
                },
                l.spec);
        });
    }
    CS_PAIR("output_padding", tr("Output padding"), 0, output_padding, s.output_padding)
    CS_PAIR("dilation", tr("Dilation"), 0, dilation, s.dilation)
    CS_INT("groups", tr("Groups"), 0, 65536, groups)
    CS_BOOL("bias", tr("Bias"), bias)
    CS_BOOL("ceil_mode", tr("Ceil mode"), ceil_mode)
    CS_BOOL("count_include_pad", tr("Count padding"), count_include_pad)
    CS_DOUBLE("negative_slope", tr("Negative slope"), -100, 100, 4, negative_slope)
    CS_DOUBLE("alpha", tr("Alpha"), -100, 100, 4, alpha)
    CS_DOUBLE("min_val", tr("Min value"), -1e6, 1e6, 4, min_val)
    CS_DOUBLE("max_val", tr("Max value"), -1e6, 1e6, 4, max_val)
    CS_INT("num_parameters", tr("Slopes"), 1, 65536, num_parameters)
    CS_DOUBLE("eps", tr("Epsilon"), 0, 1, 8, eps)
    CS_BOOL("affine", tr("Affine"), affine)
    CS_INT("num_groups", tr("Groups"), 1, 65536, num_groups)
    CS_BOOL("elementwise_affine", tr("Affine"), elementwise_affine)
    CS_DOUBLE("p", tr("Drop probability"), 0, 1, 3, p)
    CS_BOOL("approximate", tr("Tanh approximation"), tanh_approximation)
    CS_DOUBLE("beta", tr("Beta"), -1e3, 1e3, 4, beta)
    CS_DOUBLE("threshold", tr("Threshold"), -1e6, 1e6, 4, threshold)
    CS_BOOL("constant_first", tr("Constant first"), constant_first)
    if (std::holds_alternative<Unary>(spec) || std::holds_alternative<Binary>(spec))
        buildOpFields(spec); // layer_editor_math.cpp
    if (std::holds_alternative<Pad>(spec))
        buildPadFields();
    buildLayoutFields(spec);
    buildReduceFields(spec); // layer_editor_reduce.cpp
#undef CS_PAIR
#undef CS_INT
#undef CS_DOUBLE
#undef CS_BOOL
}

// pad's [top, bottom, left, right] in the padding editor's explicit mode, its mode and its fill value.
void LayerEditor::buildPadFields()
{
    auto* sides = new PaddingEditor(m_form);
    sides->modeBox()->hide(); // always explicit amounts
    connect(sides, &PaddingEditor::valueChanged, this, [this](const Padding2d& p) {
        commit(QStringLiteral("padding"), tr("Change padding"), [p](Layer& l) {
            if (auto* pad = std::get_if<Pad>(&l.spec))
                pad->padding = { p.top, p.bottom, p.left, p.right };
        });
    });
    addField(QStringLiteral("padding"), tr("Padding"), sides, [sides](const Layer& l) {
        if (const auto* pad = std::get_if<Pad>(&l.spec))
            sides->setValue(
                { Padding2d::Mode::Explicit, pad->padding[0], pad->padding[1], pad->padding[2], pad->padding[3] });
    });
    auto* mode = new QComboBox(m_form);
    for (Pad::Mode m : { Pad::Mode::Constant, Pad::Mode::Reflect, Pad::Mode::Replicate })
        mode->addItem(QString::fromLatin1(padModeName(m)), int(m));
    connect(mode, &QComboBox::currentIndexChanged, this, [this, mode] {
        const auto m = Pad::Mode(mode->currentData().toInt());
        commit(QStringLiteral("mode"), tr("Change padding mode"), [m](Layer& l) {
            if (auto* pad = std::get_if<Pad>(&l.spec)) {
                pad->mode = m;
                if (m != Pad::Mode::Constant)
                    pad->value = 0; // the file takes a value only for "constant"
            }
        });
    });
    auto* value = dspin(-1e6, 1e6, 4, m_form);
    connect(value, &QDoubleSpinBox::valueChanged, this, [this](double v) {
        commit(QStringLiteral("value"), tr("Change padding value"), [v](Layer& l) {
            if (auto* pad = std::get_if<Pad>(&l.spec))
                pad->value = v;
        });
    });
    addField(QStringLiteral("mode"), tr("Mode"), mode, [this, mode, value](const Layer& l) {
        if (const auto* pad = std::get_if<Pad>(&l.spec)) {
            const QSignalBlocker b1(mode), b2(value);
            mode->setCurrentIndex(mode->findData(int(pad->mode)));
            value->setValue(pad->value);
            m_layout->setRowVisible(value, pad->mode == Pad::Mode::Constant);
        }
    });
    addField(QStringLiteral("value"), tr("Fill value"), value, {});
}

// The layers this one reads: the network's input and every layer above it, checkable. None checked means the layer
// above (the file then has no "inputs"). Checking keeps the order the layer's inputs already have.
void LayerEditor::buildInputFields()
{
    auto* list = new QListWidget(m_form);
    list->setSelectionMode(QAbstractItemView::NoSelection);
    list->setMaximumHeight(list->fontMetrics().height() * 6);
    list->setToolTip(tr("The layers this one reads. Concat joins them in the order they were chosen (the order "
                        "in the file); a newly checked one goes last. None checked: the layer above."));
    connect(list, &QListWidget::itemChanged, this, [this, list] {
        std::vector<std::string> checked;
        for (int r = 0; r < list->count(); ++r)
            if (list->item(r)->checkState() == Qt::Checked)
                checked.push_back(list->item(r)->data(Qt::UserRole).toString().toStdString());
        auto isChecked
            = [&](const std::string& n) { return std::find(checked.begin(), checked.end(), n) != checked.end(); };
        // The order of a layer's inputs is meaning (concat joins channels in it): the inputs it already has keep
        // their order, repeats included ("add": [x, x]); a newly checked one goes last.
        std::vector<std::string> names;
        const auto& layers = m_doc->network().layers;
        const std::vector<std::string> current = m_index >= 0 && m_index < int(layers.size())
            ? layers[size_t(m_index)].inputs
            : std::vector<std::string> {};
        for (const std::string& n : current)
            if (isChecked(n))
                names.push_back(n);
        for (const std::string& n : checked)
            if (std::find(current.begin(), current.end(), n) == current.end())
                names.push_back(n);
        commit(QStringLiteral("inputs"), tr("Change inputs"), [names](Layer& l) { l.inputs = names; });
    });
    addField(QStringLiteral("inputs"), tr("Inputs"), list, [this, list](const Layer& l) {
        const QSignalBlocker block(list);
        list->clear();
        const auto& layers = m_doc->network().layers;
        QStringList names { QString::fromLatin1(kNetworkInputName) };
        for (int k = 0; k < m_index && k < int(layers.size()); ++k)
            names.append(QString::fromStdString(layers[size_t(k)].name));
        for (const QString& name : names) {
            auto* item = new QListWidgetItem(
                name == QLatin1String(kNetworkInputName) ? tr("input (the network's input)") : name, list);
            item->setData(Qt::UserRole, name);
            item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsUserCheckable);
            const bool checked = std::find(l.inputs.begin(), l.inputs.end(), name.toStdString()) != l.inputs.end();
            item->setCheckState(checked ? Qt::Checked : Qt::Unchecked);
        }
    });
}

void LayerEditor::buildInitFields(const Layer& layer)
{
    auto* kind = new QComboBox(m_form);
    for (const char* k : kInitKinds)
        kind->addItem(QString::fromLatin1(k), QString::fromLatin1(k));
    auto* seed = spin(0, 1 << 30, m_form);
    auto* low = dspin(-1e6, 1e6, 4, m_form);
    auto* high = dspin(-1e6, 1e6, 4, m_form);
    auto* value = dspin(-1e6, 1e6, 4, m_form);
    auto* weightFile = new QLineEdit(m_form);
    auto* biasFile = new QLineEdit(m_form);
    weightFile->setPlaceholderText(tr("weight.npy (relative to the network file)"));
    biasFile->setPlaceholderText(tr("bias.npy (optional)"));
    auto* browse = new QPushButton(tr("Weight file…"), m_form);

    auto update = [this, kind, seed, low, high, value, weightFile, biasFile] {
        commit(QStringLiteral("init"), tr("Change initialisation"), [=](Layer& l) {
            l.init.kind = kind->currentData().toString().toStdString();
            l.init.seed = uint64_t(seed->value());
            l.init.low = l.init.kind == "uniform" ? std::optional<double>(low->value()) : std::nullopt;
            l.init.high = l.init.kind == "uniform" ? std::optional<double>(high->value()) : std::nullopt;
            l.init.value = l.init.kind == "constant" ? std::optional<double>(value->value()) : std::nullopt;
            l.init.weight_file = l.init.kind == "file" ? weightFile->text().toStdString() : std::string();
            l.init.bias_file = l.init.kind == "file" ? biasFile->text().toStdString() : std::string();
        });
    };
    connect(kind, &QComboBox::currentIndexChanged, this, update);
    connect(seed, &QSpinBox::valueChanged, this, update);
    connect(low, &QDoubleSpinBox::valueChanged, this, update);
    connect(high, &QDoubleSpinBox::valueChanged, this, update);
    connect(value, &QDoubleSpinBox::valueChanged, this, update);
    connect(weightFile, &QLineEdit::editingFinished, this, update);
    connect(biasFile, &QLineEdit::editingFinished, this, update);
    connect(browse, &QPushButton::clicked, this, [this, weightFile, kind, update] {
        const QString base = QString::fromStdString(m_doc->network().baseDir.string());
        const QString path = QFileDialog::getOpenFileName(this, tr("Weight file"), base, tr("NumPy arrays (*.npy)"));
        if (path.isEmpty())
            return;
        QSignalBlocker b(kind);
        kind->setCurrentIndex(kind->findData(QStringLiteral("file")));
        weightFile->setText(base.isEmpty() ? path : QDir(base).relativeFilePath(path));
        update();
    });

    auto loadAll = [=, this](const Layer& l) {
        const QSignalBlocker b1(kind), b2(seed), b3(low), b4(high), b5(value);
        kind->setCurrentIndex(std::max(0, kind->findData(QString::fromStdString(l.init.kind))));
        seed->setValue(int(l.init.seed));
        low->setValue(l.init.low.value_or(-1.0));
        high->setValue(l.init.high.value_or(1.0));
        value->setValue(l.init.value.value_or(0.0));
        if (!weightFile->hasFocus())
            weightFile->setText(QString::fromStdString(l.init.weight_file));
        if (!biasFile->hasFocus())
            biasFile->setText(QString::fromStdString(l.init.bias_file));
        const std::string k = l.init.kind;
        const bool seeded
            = k == "default" || k == "uniform" || k == "he_uniform" || k == "xavier_uniform" || k == "random";
        m_layout->setRowVisible(seed, seeded);
        m_layout->setRowVisible(low, k == "uniform");
        m_layout->setRowVisible(high, k == "uniform");
        m_layout->setRowVisible(value, k == "constant");
        m_layout->setRowVisible(weightFile, k == "file");
        m_layout->setRowVisible(biasFile, k == "file");
    };
    addField(QStringLiteral("init"), tr("Weights"), kind, loadAll);
    addField(QStringLiteral("seed"), tr("Seed"), seed, {});
    addField(QStringLiteral("low"), tr("Low"), low, {});
    addField(QStringLiteral("high"), tr("High"), high, {});
    addField(QStringLiteral("value"), tr("Value"), value, {});
    addField(QStringLiteral("weight_file"), tr("Weight file"), weightFile, {});
    addField(QStringLiteral("bias_file"), tr("Bias file"), biasFile, {});
    m_layout->addRow(QString(), browse);
    (void)layer;
}

void LayerEditor::refresh()
{
    const auto& layers = m_doc->network().layers;
    if (m_index < 0 || m_index >= int(layers.size())) {
        if (!m_fields.empty() || m_index >= 0) {
            m_index = -1;
            rebuild();
        }
        return;
    }
    const Layer& layer = layers[size_t(m_index)];
    // A different kind at this index (undo, move): build the fields anew.
    if (layerTypeName(layer.spec) != m_type) {
        rebuild();
        return;
    }
    m_title->setText(tr("Layer %1 · %2").arg(m_index).arg(QString::fromStdString(layerTypeName(layer.spec))));
    for (const Field& f : m_fields)
        if (f.load)
            f.load(layer);

    const ShapeReport& shapes = m_doc->shapes();
    const LayerShape* ls = size_t(m_index) < shapes.layers.size() ? &shapes.layers[size_t(m_index)] : nullptr;
    QString error;
    if (ls && !ls->ok)
        error = QString::fromStdString(ls->error);
    m_error->setText(error.isEmpty() ? QString() : QStringLiteral("⚠ ") + error);
    m_error->setVisible(!error.isEmpty());
    markFields(error);

    QString text;
    if (ls) {
        if (ls->ok)
            text = tr("%1 → %2").arg(QString::fromStdString(ls->in.str()), QString::fromStdString(ls->out.str()));
        if (!ls->formula.empty())
            text += QStringLiteral("\n") + QString::fromStdString(ls->formula);
        if (ls->ok)
            text += QStringLiteral("\n")
                + tr("params %1 · FLOPs %2 · memory %3")
                      .arg(formatCount(double(ls->cost.params)), formatCount(ls->cost.flops),
                          formatBytes(ls->cost.bytesRead + ls->cost.bytesWritten));
    }
    m_formula->setText(text.trimmed());
    m_formula->setVisible(!text.trimmed().isEmpty());
}

// The engine's messages name the parameter at fault; mark the matching fields in place.
void LayerEditor::markFields(const QString& error)
{
    const QString e = error.toLower();
    auto mentions = [&](std::initializer_list<const char*> words) {
        for (const char* w : words)
            if (e.contains(QLatin1String(w)))
                return true;
        return false;
    };
    for (const Field& f : m_fields) {
        bool bad = false;
        if (!e.isEmpty()) {
            if (f.key == QLatin1String("kernel_size"))
                bad = mentions({ "kernel" });
            else if (f.key == QLatin1String("stride"))
                bad = mentions({ "stride" });
            else if (f.key == QLatin1String("dilation"))
                bad = mentions({ "dilation" });
            else if (f.key == QLatin1String("padding"))
                bad = mentions({ "pad" }) && !mentions({ "output_padding", "output padding" });
            else if (f.key == QLatin1String("output_padding"))
                bad = mentions({ "output_padding", "output padding" });
            else if (f.key == QLatin1String("groups"))
                bad = mentions({ "group" });
            else if (f.key == QLatin1String("out_channels"))
                bad = mentions({ "out_channels", "output channels", "channels" }) && !mentions({ "in_channels" });
            else if (f.key == QLatin1String("out_features"))
                bad = mentions({ "feature" });
            else if (f.key == QLatin1String("init") || f.key == QLatin1String("weight_file"))
                bad = mentions({ "init", "weight file", ".npy", "filter" });
        }
        markInvalid(f.widget, bad, bad ? error : QString());
    }
}

} // namespace convscope::gui
