#include "gui/views/format.h"

#include <cmath>

namespace convscope::gui {

QString formatCount(double value)
{
    const double a = std::fabs(value);
    if (a < 1e3)
        return QString::number(value, 'g', 4);
    const char* units[] = { "k", "M", "G", "T", "P" };
    int i = -1;
    double v = value;
    while (std::fabs(v) >= 1e3 && i < 4) {
        v /= 1e3;
        ++i;
    }
    return QStringLiteral("%1 %2").arg(
        QString::number(v, 'f', std::fabs(v) < 10 ? 2 : (std::fabs(v) < 100 ? 1 : 0)), QLatin1String(units[i]));
}

QString formatBytes(double bytes)
{
    const char* units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
    int i = 0;
    while (std::fabs(bytes) >= 1024 && i < 4) {
        bytes /= 1024;
        ++i;
    }
    return QStringLiteral("%1 %2").arg(
        QString::number(bytes, 'f', i == 0 ? 0 : (bytes < 10 ? 2 : 1)), QLatin1String(units[i]));
}

QString formatMs(double ms)
{
    if (ms < 0.01)
        return QStringLiteral("%1 µs").arg(QString::number(ms * 1e3, 'f', 2));
    return QStringLiteral("%1 ms").arg(QString::number(ms, 'f', ms < 1 ? 3 : (ms < 100 ? 2 : 1)));
}

} // namespace convscope::gui
