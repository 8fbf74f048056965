// The index math of the per-channel reductions (channel_reduce.cu, batchnorm_training.cu), as plain inline functions
// that compile both in the kernels (nvcc: __host__ __device__) and on the host, where the planning runs and where an
// emulation can walk the kernels' loops on the CPU.
//
// A tensor [n, channels, plane] in NCHW order; channel c's M = n·plane elements are (img, j) at
// (img·channels + c)·plane + j. Everything is counted in *units*: one float, or one float4 when the plane is a
// multiple of 4 and the pointers are 16-byte aligned (then a unit never straddles two planes, and the unit index is
// the float index / 4 with plane / 4 units per plane).
//
//   Reduction (ChannelReducePlan, ChannelWalk): channel c's range [0, M) is cut into `chunks` contiguous runs of
//   `chunkLen` elements (a multiple of 4, so that a run starts on a unit in either width); a group of G threads (a
//   warp, or a block of 256) sums one (channel, run) item. Thread t of the group visits the run's units begin + t,
//   begin + t + G, …; the walk keeps (row offset, position) and steps them by G = q·plane + r with one compare per
//   step — no division per element (the old kernels divided a 64-bit index by the plane for each element).
//   Consecutive threads read consecutive positions of a plane: the loads coalesce.
//
//   Element-wise (ElementWalk): a grid-stride loop over the whole tensor's units that also tracks each unit's
//   channel, stepping (position, channel) by the grid's stride the same way.
#pragma once

#include "kernels/common/host_device.h"

namespace convscope::cuda::train {

// How the reduction over each channel's n·plane elements is cut (planChannelReduce, on the host).
struct ChannelReducePlan {
    int group = 32; // threads per (channel, run) item: 32 (a warp) or 256 (a block)
    long long chunks = 1; // runs per channel
    long long chunkLen = 4; // elements per run, a multiple of 4 (the last run may be shorter)
};

// The plan for `channels` channels of n·plane elements on a GPU of `sms` multiprocessors: as many (channel, run) items
// as fill the GPU once (1024 threads per multiprocessor: the kernels' launch bounds, 4 blocks of 256 at up to 64
// registers), but at least 16 elements per thread of a run;
// a block of 256 per item once a run has 4096 elements or more, a warp per item below (tiny planes, the gate's
// N·C channels). At most 1024 runs per channel.
CONVSCOPE_HD ChannelReducePlan planChannelReduce(long long n, long long channels, long long plane, int sms)
{
    ChannelReducePlan p;
    const long long m = n * plane;
    const long long kPerThread = 16;
    p.group = m >= 256 * kPerThread ? 256 : 32;
    const long long threads = (sms > 1 ? sms : 1) * 1024LL;
    const long long perItem = (channels > 0 ? channels : 1) * p.group;
    long long chunks = threads / perItem; // rounded down: one wave rather than a wave and a sliver
    const long long most = m / (p.group * kPerThread);
    if (chunks > most)
        chunks = most;
    if (chunks > 1024)
        chunks = 1024;
    if (chunks < 1)
        chunks = 1;
    long long len = (m + chunks - 1) / chunks;
    len = (len + 3) / 4 * 4;
    if (len < 4)
        len = 4;
    p.chunkLen = len;
    p.chunks = m > 0 ? (m + len - 1) / len : 1;
    return p;
}

// The reduction as the kernels see it, in units (`vec`: float4 units of 4 floats).
struct ChannelReduceShape {
    long long channels, planeUnits, countUnits, chunkUnits, chunks;
    int group;
};

CONVSCOPE_HD ChannelReduceShape reduceShapeOf(
    const ChannelReducePlan& p, long long n, long long channels, long long plane, bool vec)
{
    const long long u = vec ? 4 : 1;
    return { channels, plane / u, n * plane / u, p.chunkLen / u, p.chunks, p.group };
}

// Thread `lane` (< group) of item (c, chunk): its units of channel c's run `chunk`, as indices into the tensor's
// units. for (ChannelWalk w(s, c, chunk, lane); w.more(); w.next()) use(w.index());
struct ChannelWalk {
    long long e, end; // the unit's place in the channel's range, and the run's end
    long long row, j; // the unit's plane offset (img·channels + c)·planeUnits and its position in the plane
    long long stepRow, stepJ, wrapRow, plane, stride;

    CONVSCOPE_HD ChannelWalk(const ChannelReduceShape& s, long long c, long long chunk, long long lane)
    {
        const long long begin = chunk * s.chunkUnits;
        end = begin + s.chunkUnits < s.countUnits ? begin + s.chunkUnits : s.countUnits;
        e = begin + lane;
        plane = s.planeUnits;
        stride = s.group;
        const long long img = plane > 0 ? e / plane : 0; // once per thread
        j = e - img * plane;
        row = (img * s.channels + c) * plane;
        wrapRow = s.channels * plane;
        const long long q = plane > 0 ? stride / plane : 0;
        stepJ = stride - q * plane;
        stepRow = q * wrapRow;
    }
    CONVSCOPE_HD bool more() const { return e < end; }
    CONVSCOPE_HD long long index() const { return row + j; }
    CONVSCOPE_HD void next()
    {
        e += stride;
        j += stepJ;
        row += stepRow;
        if (j >= plane) {
            j -= plane;
            row += wrapRow;
        }
    }
};

// A grid-stride walk over all n·channels·planeUnits units from `first` by `stride`, with each unit's channel.
struct ElementWalk {
    long long i, total; // the unit, and the tensor's unit count
    long long j, c; // its position in the plane and its channel
    long long stride, stepJ, stepC, plane, channels;

    CONVSCOPE_HD ElementWalk(
        long long first, long long step, long long totalUnits, long long planeUnits, long long chans)
        : i(first)
        , total(totalUnits)
        , stride(step)
        , plane(planeUnits)
        , channels(chans)
    {
        const long long row = first / plane; // once per thread
        j = first - row * plane;
        c = row % channels;
        const long long q = step / plane;
        stepJ = step - q * plane;
        stepC = q % channels;
    }
    CONVSCOPE_HD bool more() const { return i < total; }
    CONVSCOPE_HD void next()
    {
        i += stride;
        j += stepJ;
        c += stepC;
        if (j >= plane) {
            j -= plane;
            ++c;
        }
        if (c >= channels)
            c -= channels;
    }
};

} // namespace convscope::cuda::train
