// The one threading model of the CPU side: one OpenMP pool, sized once, that every CPU selection shares.
//
// Three pools used to share the cores: OpenMP's (our fast:: loops, and oneDNN, which Debian builds on OpenMP),
// OpenBLAS's own pthread pool (Debian's default flavour) and, through SingleThreadedBlas, a pool that was resized
// around every convolution. OpenBLAS's workers spin for a while after each call; on 16 cores an OpenMP region that
// started meanwhile waited a scheduler quantum for a descheduled thread, so a ReLU on 3 MB took 8 ms
// (docs/PERFORMANCE.md, "## CPU threads"). Now OpenBLAS never runs a thread of its own: it is set to one thread
// once, whatever flavour is installed (pthread, openmp or serial), and every product that used its pool is split
// across OpenMP threads by our code (detail::parallelSgemm), each part one single-threaded sgemm. So the only
// threads that ever run are OpenMP's, and nothing nests: a BLAS call inside a parallel region runs on its thread.
#pragma once

#include <string>

namespace convscope {

// Threads every CPU selection uses: CONVSCOPE_THREADS if set, else OpenMP's default for this process (OMP_NUM_THREADS,
// or the CPUs it may run on), read once.
int cpuThreadCount();
// Changes it for the runs that follow (bench --threads, the thread-scaling test); 0 restores the default.
void setCpuThreadCount(int threads);
// OpenBLAS runs on the calling thread from now on (once per process; every op that calls it calls this first, so
// its pool never starts even where a caller skipped enterCpuThreadPolicy, e.g. a test calling an op directly).
void keepBlasOnCallingThread();
// Called on the thread that is about to run CPU work (a session's prepare and run, the calibration): OpenBLAS on the
// calling thread only (once per process) and this thread's OpenMP team sized to cpuThreadCount(). Cheap: two reads
// when nothing changed.
void enterCpuThreadPolicy();
// How the installed OpenBLAS was built to thread ("pthread", "openmp", "serial") and the core it chose
// ("SkylakeX", "Haswell", "Prescott" …): both go into every result's machine description.
std::string blasThreading();
std::string blasCoreName();
// A CPU newer than the installed OpenBLAS knows gets its generic SSE3 kernels ("Prescott": Debian 12's 0.3.21 on a
// recent Xeon), a fraction of the speed of the AVX-512 or AVX2 ones the CPU runs. OpenBLAS picks its core when it is
// loaded, from OPENBLAS_CORETYPE, before main() runs: so a program's main() calls this first. Where that happened
// (and the user set no OPENBLAS_CORETYPE) it sets OPENBLAS_CORETYPE=SkylakeX (AVX-512) or Haswell (AVX2) and returns
// true: the program then starts itself again (execv of /proc/self/exe), once, since the variable is set by then.
bool chooseKnownBlasCore();
// The threads OpenBLAS would use now (1 once the policy is in force).
int blasThreadCount();

} // namespace convscope
