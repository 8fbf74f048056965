// The layer editor's fields for the reduce kind (issue 30): its op (mean, sum, max, min, l2), its dims (a line of
// integers such as "2, 3" or "-1"; empty for every axis; text that is not a list of integers is refused in place and
// not committed, shape inference reports an axis out of range or given twice) and keepdim. softmax's and
// log_softmax's dim is layer_editor_layout.cpp's integer field.
#include "gui/views/layer_editor.h"

#include "compute/reduce.h"

#include <QCheckBox>
#include <QComboBox>
#include <QLineEdit>
#include <QSignalBlocker>
#include <QStringList>

#include <optional>
#include <variant>

namespace convscope::gui {

namespace {
    std::optional<std::vector<int64_t>> parseAxes(const QString& text)
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
        return out;
    }
} // namespace

void LayerEditor::buildReduceFields(const LayerSpec& spec)
{
    if (!std::holds_alternative<Reduce>(spec))
        return;
    auto* op = new QComboBox(m_form);
    for (Reduce::Op o : { Reduce::Op::Mean, Reduce::Op::Sum, Reduce::Op::Max, Reduce::Op::Min, Reduce::Op::L2 })
        op->addItem(QString::fromLatin1(reduceOpName(o)), int(o));
    connect(op, &QComboBox::currentIndexChanged, this, [this, op] {
        const int o = op->currentData().toInt();
        commit(QStringLiteral("op"), tr("Change op"), [o](Layer& l) {
            if (auto* r = std::get_if<Reduce>(&l.spec))
                r->op = Reduce::Op(o);
        });
    });
    addField(QStringLiteral("op"), tr("Op"), op, [op](const Layer& l) {
        const QSignalBlocker b(op);
        if (const auto* r = std::get_if<Reduce>(&l.spec))
            op->setCurrentIndex(op->findData(int(r->op)));
    });

    auto* dims = new QLineEdit(m_form);
    dims->setToolTip(tr("The axes reduced, e.g. 2, 3 or -1 (negative from the end); empty: every axis"));
    dims->setPlaceholderText(tr("every axis"));
    connect(dims, &QLineEdit::editingFinished, this, [this, dims] {
        const auto v = parseAxes(dims->text());
        if (!v) {
            dims->setStyleSheet(QStringLiteral("color: #c0392b;"));
            return;
        }
        dims->setStyleSheet({});
        commit(QStringLiteral("dim"), tr("Change dim"), [v](Layer& l) {
            if (auto* r = std::get_if<Reduce>(&l.spec))
                r->dim = *v;
        });
    });
    addField(QStringLiteral("dim"), tr("Dims"), dims, [dims](const Layer& l) {
        if (const auto* r = std::get_if<Reduce>(&l.spec)) {
            QStringList parts;
            for (const int64_t x : r->dim)
                parts << QString::number(x);
            const QSignalBlocker b(dims);
            dims->setText(parts.join(QStringLiteral(", ")));
            dims->setStyleSheet({});
        }
    });

    auto* keep = new QCheckBox(m_form);
    connect(keep, &QCheckBox::toggled, this, [this](bool v) {
        commit(QStringLiteral("keepdim"), tr("Change keepdim"), [v](Layer& l) {
            if (auto* r = std::get_if<Reduce>(&l.spec))
                r->keepdim = v;
        });
    });
    addField(QStringLiteral("keepdim"), tr("Keep dims"), keep, [keep](const Layer& l) {
        if (const auto* r = std::get_if<Reduce>(&l.spec)) {
            const QSignalBlocker b(keep);
            keep->setChecked(r->keepdim);
        }
    });
}

} // namespace convscope::gui
