// The feature-map panel's comparison with the reference: which selection is the reference, and the |Δ| line under
// the maps' title (max |Δ|, the layer's relL2 and whether it exceeds the math mode's rounding bound).
#include "compute/report.h"
#include "gui/pages/feature_map_panel.h"

#include <QComboBox>
#include <QLabel>

namespace convscope::gui {

// The run's reference (cpu.direct unless told otherwise) when it ran, else the first other selection.
int FeatureMapPanel::referenceSelection() const
{
    if (!m_outcome)
        return -1;
    const int shown = m_selection->currentData().toInt();
    const auto& sels = m_outcome->result.selections;
    for (size_t i = 0; i < sels.size(); ++i)
        if (int(i) != shown && sels[i].ok && sels[i].selection.str() == m_outcome->result.meta.reference)
            return int(i);
    for (size_t i = 0; i < sels.size(); ++i)
        if (int(i) != shown && sels[i].ok)
            return int(i);
    return -1;
}

QString FeatureMapPanel::showDifferenceLine(double maxAbs, int ref, int shown)
{
    const QString refName = QString::fromStdString(m_outcome->result.selections[size_t(ref)].selection.str());
    QString text = tr("max |Δ| = %1").arg(maxAbs, 0, 'g', 3);
    // The layer's relL2 over the whole batch, and the relL2 the math mode's rounding may cause
    // (compute/rounding_bound.h): only against the run's own reference, which the profiler compared with.
    const auto& sel = m_outcome->result.selections[size_t(shown)];
    const ErrorMetrics* e = size_t(m_layer) < sel.layers.size() ? &sel.layers[size_t(m_layer)].error : nullptr;
    if (e && e->valid && refName.toStdString() == m_outcome->result.meta.reference) {
        text += tr(" · relL2 %1").arg(QString::fromStdString(relL2Text(*e)));
        if (exceedsBound(*e)) {
            m_aboveBound = true;
            text += tr(" ⚠ above the bound");
            m_error->setStyleSheet(QStringLiteral("QLabel { color: #b71c1c; font-weight: bold; }"));
            m_error->setToolTip(
                tr("This layer differs from the FP32 reference by more than the %1 rounding "
                   "alone explains (compute/rounding_bound.h): a kernel bug, or sums that "
                   "cancel more than chance")
                    .arg(QString::fromStdString(
                        sel.metadata.count("math") ? sel.metadata.at("math") : m_outcome->result.meta.mathMode)));
        } else if (e->bound > 0) {
            m_error->setToolTip(tr("relL2: ‖Δ‖₂ / ‖reference‖₂ over the whole output; bound: what the math "
                                   "mode's rounding may cause on this layer"));
        }
    }
    m_error->setText(text);
    m_error->setToolTip(m_error->toolTip().isEmpty() ? text : text + QStringLiteral("\n") + m_error->toolTip());
    return tr("Layer %1 · |%2 − %3|").arg(m_layer).arg(m_selection->currentText(), refName);
}

} // namespace convscope::gui
