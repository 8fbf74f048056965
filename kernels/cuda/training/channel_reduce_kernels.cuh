// The per-channel reduction engine of channel_reduce.cu and batchnorm_training.cu (device code: include from .cu files
// only). channel_walk.h has the index math and the plan; this runs it:
//
//   reducePartials<G, Term, Finish>  grid of (channel, run) items, a group of G threads (32: a warp; 256: the block)
//                                    per item. Each thread sums its units of the run in double (Term adds kVals
//                                    values per unit), the group reduces by warp shuffles (and, G = 256, the eight
//                                    warps' totals in shared memory, summed by thread 0 in warp order). With one run
//                                    per channel the item's totals are the channel's: Finish runs on them at once;
//                                    otherwise they go to partials[(c·chunks + chunk)·kVals + v].
//   combinePartials<Finish>          a warp per channel: lane l sums runs l, l + 32, … in order, a shuffle tree sums
//                                    the lanes, and lane 0 runs Finish on the channel's totals.
//
// Every sum has a fixed order (no atomics): the results are the same bit for bit from run to run.
#pragma once

#include "kernels/cuda/training/channel_walk.h"

namespace convscope::cuda::train::reduce {

constexpr int kThreads = 256;
constexpr int kBlocksPerSm = 4; // __launch_bounds__: at most 64 registers a thread, 1024 threads resident per SM

// f(unit) for each unit of a run's walk, two units per iteration: both loads are issued before either's sums (two
// loads in flight per thread, as many as a grid twice the size would have), the sum order unchanged.
template <class F> __device__ __forceinline__ void forEachInRun(ChannelWalk w, F&& f)
{
    while (w.more()) {
        const long long u0 = w.index();
        w.next();
        if (!w.more()) {
            f(u0);
            return;
        }
        const long long u1 = w.index();
        w.next();
        f(u0);
        f(u1);
    }
}

// f(unit, channel) for each unit of an element-wise walk, two per iteration likewise.
template <class F> __device__ __forceinline__ void forEachUnit(ElementWalk w, F&& f)
{
    while (w.more()) {
        const long long i0 = w.i, c0 = w.c;
        w.next();
        if (!w.more()) {
            f(i0, c0);
            return;
        }
        const long long i1 = w.i, c1 = w.c;
        w.next();
        f(i0, c0);
        f(i1, c1);
    }
}

// The element-wise walk of this thread of a 1-D grid.
__device__ __forceinline__ ElementWalk gridWalk(long long units, long long plane, long long channels)
{
    return ElementWalk(
        blockIdx.x * (long long)blockDim.x + threadIdx.x, (long long)gridDim.x * blockDim.x, units, plane, channels);
}

// The sum of v over a warp's 32 lanes, in lane 0 (a fixed shuffle tree).
__device__ __forceinline__ double warpSum(double v)
{
    for (int offset = 16; offset > 0; offset /= 2)
        v += __shfl_down_sync(0xffffffffu, v, offset);
    return v;
}

// Term: `static constexpr int kVals`; `void start(long long c)` (per-channel state, once per thread);
// `void add(double (&acc)[kVals], long long unit)`.
// Finish: `void operator()(long long c, const double (&total)[kVals]) const`.
template <int G, class Term, class Finish>
__global__ void __launch_bounds__(kThreads, kBlocksPerSm)
    reducePartials(ChannelReduceShape s, Term term, Finish finish, double* __restrict__ partials)
{
    constexpr int V = Term::kVals;
    constexpr int kItems = kThreads / G;
    const long long item = (long long)blockIdx.x * kItems + threadIdx.x / G;
    const int lane = int(threadIdx.x % G);
    const bool live = item < s.channels * s.chunks; // G = 32: whole warps drop out; G = 256: always live
    const long long c = live ? item / s.chunks : 0, chunk = live ? item - c * s.chunks : 0;
    double acc[V] = {};
    if (live) {
        term.start(c);
        forEachInRun(ChannelWalk(s, c, chunk, lane), [&](long long u) { term.add(acc, u); });
    }
    for (int v = 0; v < V; ++v)
        acc[v] = warpSum(acc[v]);
    if constexpr (G > 32) {
        __shared__ double warps[kThreads / 32][V];
        const int warp = int(threadIdx.x / 32);
        if (threadIdx.x % 32 == 0)
            for (int v = 0; v < V; ++v)
                warps[warp][v] = acc[v];
        __syncthreads();
        if (threadIdx.x == 0)
            for (int v = 0; v < V; ++v) {
                double t = 0;
                for (int k = 0; k < kThreads / 32; ++k)
                    t += warps[k][v];
                acc[v] = t;
            }
    }
    if (!live || lane != 0)
        return;
    if (s.chunks == 1) {
        finish(c, acc);
        return;
    }
    for (int v = 0; v < V; ++v)
        partials[item * V + v] = acc[v];
}

template <int V, class Finish>
__global__ void __launch_bounds__(kThreads)
    combinePartials(long long channels, long long chunks, Finish finish, const double* __restrict__ partials)
{
    const long long c = (long long)blockIdx.x * (kThreads / 32) + threadIdx.x / 32;
    if (c >= channels)
        return; // whole warps
    const int lane = int(threadIdx.x % 32);
    double acc[V] = {};
    for (long long k = lane; k < chunks; k += 32)
        for (int v = 0; v < V; ++v)
            acc[v] += partials[(c * chunks + k) * V + v];
    for (int v = 0; v < V; ++v)
        acc[v] = warpSum(acc[v]);
    if (lane == 0)
        finish(c, acc);
}

// The launches of one reduction of `channels` channels by plan p (partials: p.chunks·channels·kVals doubles when
// p.chunks > 1, else unused).
template <class Term, class Finish>
void launchReduce(
    const ChannelReduceShape& s, const Term& term, const Finish& finish, double* partials, cudaStream_t st)
{
    const long long items = s.channels * s.chunks;
    if (s.group == 256)
        reducePartials<256, Term, Finish><<<unsigned(items), kThreads, 0, st>>>(s, term, finish, partials);
    else
        reducePartials<32, Term, Finish>
            <<<unsigned((items + kThreads / 32 - 1) / (kThreads / 32)), kThreads, 0, st>>>(s, term, finish, partials);
    if (s.chunks > 1)
        combinePartials<Term::kVals, Finish>
            <<<unsigned((s.channels + kThreads / 32 - 1) / (kThreads / 32)), kThreads, 0, st>>>(
                s.channels, s.chunks, finish, partials);
}

// Blocks for an element-wise pass over `units` units (kernels bound to kBlocksPerSm): one resident wave, no more
// than the units need; the threads loop.
inline unsigned elementBlocks(long long units, int sms)
{
    const long long need = (units + kThreads - 1) / kThreads, most = (long long)kBlocksPerSm * (sms > 1 ? sms : 1);
    return unsigned(need < most ? (need > 0 ? need : 1) : most);
}

// 16-byte aligned (float4 loads and stores).
inline bool aligned16(const void* p) { return (reinterpret_cast<unsigned long long>(p) & 15u) == 0; }

} // namespace convscope::cuda::train::reduce
