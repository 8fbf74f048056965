// The clock a CPU session (cpu, onednn) times its layers with, chosen by the session option "clock":
//   wall (default)  std::chrono::steady_clock, what a user waits;
//   cpu             the process's CPU time (CLOCK_PROCESS_CPUTIME_ID), all threads summed. On a machine shared
//                   with other work the OS hands the cores to other processes part of the time; wall time then
//                   measures the neighbours, CPU time does not. Meaningful for single-thread runs
//                   (OMP_NUM_THREADS=1), where it equals the wall time of an idle machine; with several threads
//                   it also counts time spent spinning at barriers.
#pragma once

#include "compute/backend.h"
#include "compute/error.h"

#include <chrono>
#include <ctime>

namespace convscope::cpu {

class LayerClock {
public:
    explicit LayerClock(const SessionOptions& options)
    {
        const auto it = options.extra.find("clock");
        if (it == options.extra.end() || it->second == "wall")
            return;
        if (it->second != "cpu")
            throw InputError("clock=" + it->second + ": expected wall or cpu");
        m_cpuTime = true;
    }
    // Milliseconds since an arbitrary origin.
    double nowMs() const
    {
        if (!m_cpuTime)
            return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch())
                .count();
        timespec t;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
        return double(t.tv_sec) * 1e3 + double(t.tv_nsec) * 1e-6;
    }
    const char* name() const { return m_cpuTime ? "process CPU time" : "wall (steady_clock)"; }

private:
    bool m_cpuTime = false;
};

} // namespace convscope::cpu
