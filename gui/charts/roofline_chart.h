// The roofline: achieved GFLOP/s against arithmetic intensity (FLOP per byte moved) for every layer of
// every selection, under the ceilings of the device each selection ran on: its peak compute rate and its
// memory bandwidth, measured by a short calibration once per device (cached) or read from a saved
// session, and captioned with how they were measured. The compute roof is the one of the run's math mode: the
// cuBLAS Tensor Core GEMM rate of a TF32, FP16 or BF16 run, the FP32 peak otherwise.
#pragma once

#include "gui/charts/chart_view.h"
#include "gui/document/engine.h"
#include "gui/pages/page.h"

#include <QMap>

class QPushButton;

namespace convscope::gui {

class RooflineChart : public ChartView, public Page {
    Q_OBJECT
public:
    explicit RooflineChart(Engine* engine, QWidget* parent = nullptr);
    QString chartTitle() const override;

    void setRun(RunOutcomePtr run);
    void showOutcome(RunOutcomePtr outcome, const QString&) override { setRun(std::move(outcome)); }
    // Ceilings that came with a saved session: used instead of this machine's, and nothing is calibrated.
    void setSessionCeilings(const std::vector<std::pair<QString, DeviceCeilings>>& ceilings);
    void clearSession();
    void setCeilings(const QString& backend, const DeviceCeilings& c);
    bool hasCeilings(const QString& backend) const { return m_ceilings.contains(backend); }
    DeviceCeilings ceilings(const QString& backend) const { return m_ceilings.value(backend); }
    int pointCount() const;
    // Calibration (about a second of every core) starts only while the page is looked at (its dock tab is
    // in front); the window says when.
    void setActive(bool active);
    bool isCalibrating() const { return !m_pending.isEmpty(); } // layers plotted, all selections together
    void recalibrate();
    // The run's math mode (FP32 without a run): whose ceiling the roofs are drawn at.
    MathMode runMathMode() const;
    // The roof's name for a mode: "cuBLAS BF16 GEMM 8192³: 650 TFLOP/s", or "FP32 51 TFLOP/s" where that mode
    // has no ceiling of its own (FP32 runs, the CPU, ceilings measured before the Tensor Core ones).
    static QString ceilingLabel(const DeviceCeilings& c, MathMode mode);
    // The caption's account of the compute ceiling: the mode's rate and method, and the FP32 rate beside it (with its
    // method in an FP32 run).
    static QString ceilingDetail(const DeviceCeilings& c, MathMode mode);

Q_SIGNALS:
    void ceilingsChanged();

protected:
    void rebuild() override { redraw(); }

private:
    void redraw();
    void requestMissing();

    Engine* m_engine;
    RunOutcomePtr m_run;
    QMap<QString, DeviceCeilings> m_ceilings;
    QMap<QString, QString> m_failures;
    QSet<QString> m_pending;
    bool m_session = false;
    bool m_active = false;
    QPushButton* m_recalibrate;
    int m_points = 0;
};

} // namespace convscope::gui
