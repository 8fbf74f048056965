// Number formatting shared by the views: counts with SI prefixes, bytes in KiB / MiB, milliseconds.
#pragma once

#include <QString>

#include <cstdint>

namespace convscope::gui {

QString formatCount(double value); // 1234567 -> "1.23 M"
QString formatBytes(double bytes); // 3136 -> "3.06 KiB"
QString formatMs(double ms); // "0.123 ms", "12.3 ms"

} // namespace convscope::gui
