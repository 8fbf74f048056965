#include "gui/calibration_cache.h"

#include "compute/backend_registry.h"

#include <QSettings>

namespace convscope::gui::calibration_cache {

namespace {
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
    if (!s.contains(QStringLiteral("peak_gflops")))
        return std::nullopt;
    DeviceCeilings c;
    c.device = s.value(QStringLiteral("device")).toString().toStdString();
    c.peakGflops = s.value(QStringLiteral("peak_gflops")).toDouble();
    c.bandwidthGBs = s.value(QStringLiteral("bandwidth_gbs")).toDouble();
    c.computeMethod = s.value(QStringLiteral("compute_method")).toString().toStdString();
    c.bandwidthMethod = s.value(QStringLiteral("bandwidth_method")).toString().toStdString();
    return c;
}

void store(const QString& backend, const QString& device, const DeviceCeilings& c)
{
    QSettings s;
    s.beginGroup(keyFor(backend, device));
    s.setValue(QStringLiteral("device"), QString::fromStdString(c.device));
    s.setValue(QStringLiteral("peak_gflops"), c.peakGflops);
    s.setValue(QStringLiteral("bandwidth_gbs"), c.bandwidthGBs);
    s.setValue(QStringLiteral("compute_method"), QString::fromStdString(c.computeMethod));
    s.setValue(QStringLiteral("bandwidth_method"), QString::fromStdString(c.bandwidthMethod));
}

void clear()
{
    QSettings s;
    s.remove(QStringLiteral("calibration"));
}

} // namespace convscope::gui::calibration_cache
