// The layer editor's op field for the unary and binary kinds (issue 30), from a list: exp, log, sqrt, reciprocal,
// neg, abs, erf; add, sub, mul, div, pow, min, max. gelu's approximation, softplus's beta and threshold and binary's
// constant_first are the plain fields of layer_editor.cpp; binary's constant values are edited in the file.
#include "gui/views/layer_editor.h"

#include "compute/binary.h"

#include <QComboBox>
#include <QSignalBlocker>

#include <variant>

namespace convscope::gui {

void LayerEditor::buildOpFields(const LayerSpec& spec)
{
    const bool unary = std::holds_alternative<Unary>(spec);
    auto* op = new QComboBox(m_form);
    if (unary)
        for (Unary::Op o : { Unary::Op::Exp, Unary::Op::Log, Unary::Op::Sqrt, Unary::Op::Reciprocal, Unary::Op::Neg,
                 Unary::Op::Abs, Unary::Op::Erf })
            op->addItem(QString::fromLatin1(unaryOpName(o)), int(o));
    else
        for (Binary::Op o : { Binary::Op::Add, Binary::Op::Sub, Binary::Op::Mul, Binary::Op::Div, Binary::Op::Pow,
                 Binary::Op::Min, Binary::Op::Max })
            op->addItem(QString::fromLatin1(binaryOpName(o)), int(o));
    connect(op, &QComboBox::currentIndexChanged, this, [this, op] {
        const int o = op->currentData().toInt();
        commit(QStringLiteral("op"), tr("Change op"), [o](Layer& l) {
            if (auto* u = std::get_if<Unary>(&l.spec))
                u->op = Unary::Op(o);
            else if (auto* b = std::get_if<Binary>(&l.spec))
                b->op = Binary::Op(o);
        });
    });
    addField(QStringLiteral("op"), tr("Op"), op, [op](const Layer& l) {
        const QSignalBlocker b(op);
        if (const auto* u = std::get_if<Unary>(&l.spec))
            op->setCurrentIndex(op->findData(int(u->op)));
        else if (const auto* bin = std::get_if<Binary>(&l.spec))
            op->setCurrentIndex(op->findData(int(bin->op)));
    });
}

} // namespace convscope::gui
