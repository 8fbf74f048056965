// The layer editor's fields for the layout kinds and their axes: flatten's start_dim / end_dim, concat's and slice's
// dim, slice's start and end, reshape's shape, transpose's dims and gather's indices and their shape (a list of
// integers typed as "2, -1, 768"; text that is not a list of integers is refused in place and not committed, shape
// inference reports the rest).
#include "gui/views/layer_editor.h"

#include <QLineEdit>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QStringList>

#include <optional>
#include <variant>

namespace convscope::gui {

namespace {
    // An empty list only where `allowEmpty` (gather's indices_shape: one scalar index).
    std::optional<std::vector<int64_t>> parseIntList(const QString& text, bool allowEmpty)
    {
        QString t = text.trimmed();
        if (t.startsWith(QLatin1Char('[')) && t.endsWith(QLatin1Char(']')))
            t = t.mid(1, t.size() - 2);
        std::vector<int64_t> out;
        for (const QString& part : t.split(QLatin1Char(','), Qt::SkipEmptyParts)) {
            bool ok = false;
            const qlonglong v = part.trimmed().toLongLong(&ok);
            if (!ok)
                return std::nullopt;
            out.push_back(int64_t(v));
        }
        if (out.empty() && !allowEmpty)
            return std::nullopt;
        return out;
    }

    // gather: indices whose count the indices' shape does not hold become a list of them.
    void fitIndexShape(Gather& g)
    {
        int64_t count = 1;
        for (const int64_t d : g.indices_shape)
            count *= d;
        if (count != int64_t(g.indices.size()))
            g.indices_shape = { int64_t(g.indices.size()) };
    }

    QString listText(const std::vector<int64_t>& v)
    {
        QStringList parts;
        for (const int64_t x : v)
            parts << QString::number(x);
        return parts.join(QStringLiteral(", "));
    }
} // namespace

void LayerEditor::buildLayoutFields(const LayerSpec& spec)
{
    // An integer member of whatever kind holds it: key, label, range, read, write.
    auto intField = [&](const char* key, const QString& label, int lo, int hi, auto get, auto set) {
        if (!std::visit([&](const auto& s) { return get(s).has_value(); }, spec))
            return;
        auto* e = new QSpinBox(m_form);
        e->setRange(lo, hi);
        const QString k = QString::fromLatin1(key);
        connect(e, &QSpinBox::valueChanged, this, [this, k, set](int v) {
            commit(k, tr("Change %1").arg(k), [v, set](Layer& l) { std::visit([&](auto& s) { set(s, v); }, l.spec); });
        });
        addField(k, label, e, [e, get](const Layer& l) {
            if (const auto v = std::visit([&](const auto& s) { return get(s); }, l.spec)) {
                const QSignalBlocker b(e);
                e->setValue(int(*v));
            }
        });
    };
#define CS_LAYOUT_INT(key, label, lo, hi, member)                                                                      \
    intField(                                                                                                          \
        key, label, lo, hi,                                                                                            \
        [](const auto& s) -> std::optional<int64_t> {                                                                  \
            if constexpr (requires { int64_t(s.member); })                                                             \
                return s.member;                                                                                       \
            else                                                                                                       \
                return std::nullopt;                                                                                   \
        },                                                                                                             \
        [](auto& s, int v) {                                                                                           \
            if constexpr (requires { s.member = int64_t(v); })                                                         \
                s.member = int64_t(v);                                                                                 \
        });
    CS_LAYOUT_INT("start_dim", tr("Start dim"), -6, 5, start_dim)
    CS_LAYOUT_INT("end_dim", tr("End dim"), -6, 5, end_dim)
    CS_LAYOUT_INT("dim", tr("Dim"), -6, 5, dim)
    CS_LAYOUT_INT("start", tr("Start"), 0, 1 << 30, start)
    CS_LAYOUT_INT("end", tr("End"), 1, 1 << 30, end)
    CS_LAYOUT_INT("axis", tr("Axis"), -6, 5, axis)
#undef CS_LAYOUT_INT

    // reshape's shape and transpose's dims: a line of integers.
    auto listField = [&](const char* key, const QString& label, const QString& tip, auto member) {
        auto* e = new QLineEdit(m_form);
        e->setToolTip(tip);
        const QString k = QString::fromLatin1(key);
        connect(e, &QLineEdit::editingFinished, this, [this, e, k, member] {
            const auto v = parseIntList(e->text(), k == QLatin1String("indices_shape"));
            if (!v) {
                e->setStyleSheet(QStringLiteral("color: #c0392b;"));
                return;
            }
            e->setStyleSheet({});
            commit(k, tr("Change %1").arg(k), [v, member](Layer& l) {
                if (auto* p = member(&l.spec))
                    *p = *v;
                if (auto* g = std::get_if<Gather>(&l.spec))
                    fitIndexShape(*g);
            });
        });
        addField(k, label, e, [e, member](const Layer& l) {
            if (const auto* p = member(const_cast<LayerSpec*>(&l.spec))) {
                const QSignalBlocker b(e);
                e->setText(listText(*p));
                e->setStyleSheet({});
            }
        });
    };
    if (std::holds_alternative<Reshape>(spec))
        listField("shape", tr("Shape"), tr("The new dims, e.g. 2, -1, 768 (one -1 is inferred)"),
            [](LayerSpec* s) -> std::vector<int64_t>* {
                auto* r = s ? std::get_if<Reshape>(s) : nullptr;
                return r ? &r->shape : nullptr;
            });
    if (std::holds_alternative<LayerNorm>(spec))
        listField("normalized_shape", tr("Normalized shape"),
            tr("The sizes of the last axes normalised over, e.g. 768 (PyTorch's LayerNorm(normalized_shape))"),
            [](LayerSpec* s) -> std::vector<int64_t>* {
                auto* n = s ? std::get_if<LayerNorm>(s) : nullptr;
                return n ? &n->normalized_shape : nullptr;
            });
    if (std::holds_alternative<Transpose>(spec))
        listField("dims", tr("Dims"), tr("Output axis i is input axis dims[i], e.g. 0, 2, 3, 1 (PyTorch's permute)"),
            [](LayerSpec* s) -> std::vector<int64_t>* {
                auto* t = s ? std::get_if<Transpose>(s) : nullptr;
                return t ? &t->dims : nullptr;
            });
    if (std::holds_alternative<Gather>(spec)) {
        listField("indices", tr("Indices"),
            tr("The positions taken along the axis, e.g. 2, 0, -1 (negative counts from the end; repeats allowed)"),
            [](LayerSpec* s) -> std::vector<int64_t>* {
                auto* g = s ? std::get_if<Gather>(s) : nullptr;
                return g ? &g->indices : nullptr;
            });
        listField("indices_shape", tr("Indices shape"),
            tr("The indices' own dims, which replace the axis in the output; empty for one scalar index (the axis is "
               "removed)"),
            [](LayerSpec* s) -> std::vector<int64_t>* {
                auto* g = s ? std::get_if<Gather>(s) : nullptr;
                return g ? &g->indices_shape : nullptr;
            });
    }
}

} // namespace convscope::gui
