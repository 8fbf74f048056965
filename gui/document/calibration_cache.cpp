#include "gui/document/calibration_cache.h"

#include "compute/backend_registry.h"

#include <QSettings>

namespace convscope::gui::calibration_cache {

namespace {
    // 2: with the Tensor Core ceilings ("math/<mode>/gflops", "math/<mode>/method").
    constexpr int kVersion = 2;

    QString keyFor(const QString& backend, const QString& device)
    {
        QString d = device;
        d.replace(QLatin1Char('/'), QLatin1Char('_'));
        return QStringLiteral("calibration/%1/%2").arg(backend, d.isEmpty() ? QStringLiteral("unknown") : d);
    }
} // namespace

QString deviceKey(const QString& backend)
{
    auto b = BackendRegistry::instance().find(backend.toStdString());
    if (!b || !b->availability().available)
        return {};
    const auto info = b->info();
    auto it = info.find("device");
    return it == info.end() ? QString() : QString::fromStdString(it->second);
}

std::optional<DeviceCeilings> load(const QString& backend, const QString& device)
{
    QSettings s;
    s.beginGroup(keyFor(backend, device));
    // Entries stored before the Tensor Core ceilings (no "version") are measured again, once, so a GPU's TF32,
    // FP16 and BF16 roofs appear without the person having to find the Recalibrate button.
    if (!s.contains(QStringLiteral("peak_gflops")) || s.value(QStringLiteral("version")).toInt() < kVersion)
        return std::nullopt;
    DeviceCeilings c;
    c.device = s.value(QStringLiteral("device")).toString().toStdString();
    c.peakGflops = s.value(QStringLiteral("peak_gflops")).toDouble();
    c.bandwidthGBs = s.value(QStringLiteral("bandwidth_gbs")).toDouble();
    c.computeMethod = s.value(QStringLiteral("compute_method")).toString().toStdString();
    c.bandwidthMethod = s.value(QStringLiteral("bandwidth_method")).toString().toStdString();
    // The Tensor Core ceilings, "math/<mode>/gflops" and "math/<mode>/method" (absent in entries stored before them).
    s.beginGroup(QStringLiteral("math"));
    for (const QString& mode : s.childGroups()) {
        const double g = s.value(mode + QStringLiteral("/gflops")).toDouble();
        if (g <= 0)
            continue;
        c.mathGflops[mode.toStdString()] = g;
        c.mathMethods[mode.toStdString()] = s.value(mode + QStringLiteral("/method")).toString().toStdString();
    }
    s.endGroup();
    return c;
}

void store(const QString& backend, const QString& device, const DeviceCeilings& c)
{
    QSettings s;
    s.beginGroup(keyFor(backend, device));
    s.setValue(QStringLiteral("version"), kVersion);
    s.setValue(QStringLiteral("device"), QString::fromStdString(c.device));
    s.setValue(QStringLiteral("peak_gflops"), c.peakGflops);
    s.setValue(QStringLiteral("bandwidth_gbs"), c.bandwidthGBs);
    s.setValue(QStringLiteral("compute_method"), QString::fromStdString(c.computeMethod));
    s.setValue(QStringLiteral("bandwidth_method"), QString::fromStdString(c.bandwidthMethod));
    s.remove(QStringLiteral("math")); // a recalibration that measured fewer modes leaves none of the old ones
    for (const auto& [mode, g] : c.mathGflops) {
        const QString m = QStringLiteral("math/") + QString::fromStdString(mode);
        s.setValue(m + QStringLiteral("/gflops"), g);
        const auto it = c.mathMethods.find(mode);
        s.setValue(m + QStringLiteral("/method"), QString::fromStdString(it == c.mathMethods.end() ? "" : it->second));
    }
}

void clear()
{
    QSettings s;
    s.remove(QStringLiteral("calibration"));
}

} // namespace convscope::gui::calibration_cache
