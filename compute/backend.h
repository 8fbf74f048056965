// A backend is where a layer runs and whose code does it: "cpu" (ours), "cuda" (our kernels), "cudnn"
// (NVIDIA's library). A backend has algorithms; a selection "backend.algorithm" (e.g. "cuda.tiled")
// names what to run. The algorithm chooses how convolutions are computed; every other layer runs on the
// backend's one implementation of it.
//
// GPU backends live in loadable modules (kernels/), so nothing here may mention CUDA. A session keeps
// data on its device between layers: the profiler asks it for one timed pass at a time and fetches
// feature maps separately, so display copies are never counted as compute.
#pragma once

#include "compute/network.h"
#include "compute/shape_inference.h"
#include "compute/tensor.h"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace convscope {

class TrainingSession; // compute/training/training.h

// How a run computes (`--math`, the window's math choice), recorded with every result:
//   fp32  FP32 storage and FMAs, no Tensor Cores (cuDNN pedantic math): the reference arithmetic;
//   tf32  FP32 storage, convolution and GEMM operands rounded to TF32 (10-bit mantissa) on Tensor Cores;
//   fp16  tensors stored as IEEE half on the GPU, Tensor Core products, FP32 sums;
//   bf16  tensors stored as bfloat16, Tensor Core products, FP32 sums.
// What a mode stores and rounds is in compute/storage_format.h; the error it may cause in compute/rounding_bound.h.
enum class MathMode { FP32, TF32, FP16, BF16 };
std::string mathModeName(MathMode m); // "fp32", "tf32", "fp16", "bf16"
MathMode parseMathMode(const std::string& s); // throws InputError
const char* const kMathModeHelp = "fp32, tf32, fp16 or bf16";

// `fused` ("cuda.implicit_gemm+fused") runs the network after the fusion pass (compute/fusion.h): batch norm
// folded into the convolution before it, and the activation after that into the convolution's epilogue where
// the backend can do it. A run can hold a selection and its fused twin, so the two are timed side by side.
struct Selection {
    std::string backend, algorithm;
    bool fused = false;
    std::string str() const { return backend + "." + algorithm + (fused ? "+fused" : ""); }
    // "cuda.tiled", "cuda.tiled+fused"; throws InputError if malformed
    static Selection parse(const std::string& s);
    Selection unfused() const { return { backend, algorithm, false }; }
    bool operator==(const Selection&) const = default;
};

struct Availability {
    bool available = false;
    std::string reason; // why not, in words a person can act on ("no CUDA driver found")
};

struct Support {
    bool supported = true;
    std::string reason; // why not ("cuda.tiled: dilation > 1 is unsupported")
};

struct AlgorithmInfo {
    std::string name; // "tiled"
    std::string description; // one line
};

// Options that reach every session of a run.
struct SessionOptions {
    MathMode math = MathMode::FP32;
    int64_t memoryBudgetBytes = 0; // 0 = backend default (a share of free device memory)
    std::map<std::string, std::string> extra; // backend-specific ("workspace_limit", "layout", ...)
};

// Time of one pass through the network, in milliseconds.
struct PassTiming {
    double h2dMs = 0; // input to the device (0 on the CPU)
    std::vector<double> layerMs; // compute only, one per layer
    double d2hMs = 0; // final output back to the host (0 on the CPU)
};

// The device's ceilings for the roofline view, measured by a short calibration (a second or less): the
// highest arithmetic rate and the highest memory bandwidth this backend reaches, with how each was measured.
struct DeviceCeilings {
    std::string device; // "AMD EPYC 7B13 (2 threads)", "NVIDIA H200"
    double peakGflops = 0; // FP32 GFLOP/s (multiply and add counted as 2)
    double bandwidthGBs = 0; // GB/s (1e9 bytes), bytes read + written
    std::string computeMethod; // "OpenBLAS sgemm 1024³, best of 5"
    std::string bandwidthMethod; // "memcpy of 256 MiB, best of 5, read + write counted"
    // Tensor Core (or CPU BF16) ceilings by math mode name ("tf32", "fp16", "bf16"): the rate a vendor GEMM of that
    // format reaches (cuBLAS on the GPU, oneDNN's matmul on the CPU). Empty where nothing was measured; the roofline
    // of a run in that mode uses it instead of peakGflops.
    std::map<std::string, double> mathGflops;
    std::map<std::string, std::string> mathMethods; // how each was measured
    double peakFor(MathMode m) const; // mathGflops[mode] when measured, else peakGflops
};

class BackendSession {
public:
    virtual ~BackendSession() = default;
    // Untimed: allocate buffers, upload weights, pick algorithms, warm caches / first launches.
    // `net` has materialised parameters and `shapes.ok()` holds.
    virtual void prepare(const Network& net, const ShapeReport& shapes) = 0;
    // One timed pass: input to the device, every layer in order on its predecessor's output, final
    // output back to the host.
    virtual PassTiming runPass(const Tensor& input) = 0;
    // A host copy of layer i's output from the last pass; *ms receives the time the copy took
    // (measured apart, never counted as compute).
    virtual Tensor fetchOutput(size_t layer, double* ms) = 0;
    // What actually ran for layer i, when it is more than the selection says ("cudnn.auto → winograd",
    // "explicit pad step for asymmetric padding").
    virtual std::string layerNote(size_t /*layer*/) const { return {}; }
    // Device, driver, library versions, math mode as this session ran them.
    virtual std::map<std::string, std::string> metadata() const { return {}; }
    // Where a pass is, for a person watching (the profiler's per-layer progress): runPass calls it after each layer,
    // outside the layer's timed region; it may throw (Cancelled) to stop the pass. Unset, it costs one test per
    // layer. A session that queues its layers asynchronously (the GPU's) does not call it: there a layer has not run
    // when it is queued.
    void setLayerDone(std::function<void(size_t layer)> fn) { m_layerDone = std::move(fn); }

protected:
    void layerDone(size_t layer) const
    {
        if (m_layerDone)
            m_layerDone(layer);
    }

private:
    std::function<void(size_t)> m_layerDone;
};

class Backend {
public:
    virtual ~Backend() = default;
    virtual std::string name() const = 0; // "cpu"
    virtual std::string description() const = 0;
    virtual std::vector<AlgorithmInfo> algorithms() const = 0;
    virtual Availability availability() const = 0;
    // Can `algorithm` run this layer with this input? (Called only for available backends.)
    virtual Support supports(const std::string& algorithm, const LayerSpec& spec, const LayerShape& shape) const = 0;
    virtual std::unique_ptr<BackendSession> createSession(const std::string& algorithm, const SessionOptions& options)
        = 0;
    // Does this backend's code for this kind handle volumes (5-D [N, C, D, H, W] tensors, the depth included)? The
    // profiler refuses a layer with a volume input or output on a backend that says no, naming the layer, before it
    // could build descriptors or grids from N, C, H, W alone and silently drop the depth.
    virtual bool takesVolumes(const LayerSpec& /*spec*/) const { return false; }
    // Can a convolution of this backend apply `activation` in its epilogue (Conv2d::fused_activation)? Only then
    // does the fusion pass move an activation layer into the convolution before it for this backend.
    virtual bool fusesActivation(FusedActivation::Kind /*activation*/) const { return false; }
    // Can a convolution of this backend add a skip tensor in its epilogue (Conv2d::fused_residual: y = act(conv(x) +
    // b + skip))? Only then does the fusion pass fold a residual add (and the activation after it) into the conv.
    virtual bool fusesResidual() const { return false; }
    // Device, versions ("device", "driver", "cuda", "cudnn", ...) for `info` and run metadata.
    virtual std::map<std::string, std::string> info() const { return {}; }
    // The roofline ceilings of the device this backend runs on (see DeviceCeilings). Runs on the calling
    // thread (the engine's worker in the window); should take about a second at most. nullopt: no
    // calibration for this backend (the roofline then shows no ceilings for it).
    virtual std::optional<DeviceCeilings> calibrate(const SessionOptions& /*options*/) { return std::nullopt; }
    // A session that runs the training step (forward, loss, backward, update) with `algorithm`, or null when this
    // backend has no backward ops (`train` then refuses the selection as unsupported). The CPU backend returns one
    // for cpu.direct and cpu.im2col_gemm; a GPU module overrides this to add its own (compute/training/training.h).
    virtual std::unique_ptr<TrainingSession> createTrainingSession(
        const std::string& algorithm, const SessionOptions& options);
    // The algorithm explorer (cudnn): for convolution layer `layer` of `net` (parameters materialised,
    // shapes.ok()), every algorithm's status or the library's reason it cannot run, time, workspace bytes,
    // determinism and math type, as a JSON document (see kernels/cudnn/explorer.cpp for the fields). Runs on the
    // device, untimed by the profiler. Empty when the backend has no explorer or the layer is not a convolution.
    virtual std::string explore(
        const Network& /*net*/, const ShapeReport& /*shapes*/, size_t /*layer*/, const SessionOptions& /*options*/)
    {
        return {};
    }
};

} // namespace convscope
