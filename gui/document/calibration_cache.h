// Roofline ceilings measured once per device and kept in QSettings ("calibration/<backend>/<device>"), so
// the short calibration runs the first time a backend is plotted on a machine and never again there (entries of an
// older format, without the Tensor Core ceilings, are measured again once).
#pragma once

#include "compute/backend.h"

#include <QString>

#include <optional>

namespace convscope::gui {

namespace calibration_cache {
    // The device a backend runs on, as its info() names it ("" when unknown or unavailable).
    QString deviceKey(const QString& backend);
    std::optional<DeviceCeilings> load(const QString& backend, const QString& device);
    void store(const QString& backend, const QString& device, const DeviceCeilings& c);
    void clear();
} // namespace calibration_cache

} // namespace convscope::gui
