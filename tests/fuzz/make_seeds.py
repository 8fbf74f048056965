#!/usr/bin/env python3
"""Writes the fuzzers' seed corpora (tests/fuzz/corpus/{npy,network,image,onnx}) from files in the repository and
tiny images built byte by byte (no PIL needed). Run from anywhere: python3 tests/fuzz/make_seeds.py
The ONNX seeds are small network seeds written by ConvScope's own exporter: set CONVSCOPE_CLI to a built
convscope-cli to remake them (without it they are left as they are).

image seeds start with one byte the target uses to pick the channel count (0: 1, 1: 3, 2: 4), then the file.
"""
import os
import shutil
import struct
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def out(kind, name, data):
    d = os.path.join(HERE, "corpus", kind)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def png(w, h, color_type, bit_depth=8, interlace=0):
    channels = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[color_type]
    raw = b""
    for y in range(h):
        raw += b"\x00" + bytes(((x * 37 + y * 11 + c * 5) & 0xFF) for x in range(w) for c in range(channels))

    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)

    body = chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, bit_depth, color_type, 0, 0, interlace))
    if color_type == 3:
        body += chunk(b"PLTE", bytes(range(48)))
    body += chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
    return b"\x89PNG\r\n\x1a\n" + body


def bmp(w, h):
    row = (w * 3 + 3) & ~3
    pixels = b"".join(bytes(((x * 40 + y * 7 + c * 3) & 0xFF) for x in range(w) for c in range(3)).ljust(row, b"\0")
                      for y in range(h))
    header = struct.pack("<2sIHHI", b"BM", 54 + len(pixels), 0, 0, 54)
    info = struct.pack("<IiiHHIIiiII", 40, w, h, 1, 24, 0, len(pixels), 2835, 2835, 0, 0)
    return header + info + pixels


def ppm(w, h, magic=b"P6", maxval=255):
    data = bytes(((i * 13) & 0xFF) for i in range(w * h * (3 if magic == b"P6" else 1)))
    return magic + b"\n%d %d\n%d\n" % (w, h, maxval) + data


def tga(w, h):
    header = struct.pack("<BBBHHBHHHHBB", 0, 0, 2, 0, 0, 0, 0, 0, w, h, 24, 0)
    return header + bytes(((i * 29) & 0xFF) for i in range(w * h * 3))


def gif(w, h):
    # One frame, 2-colour global table, LZW minimum code size 2, a tiny valid stream (clear, 0s, end).
    head = b"GIF89a" + struct.pack("<HHBBB", w, h, 0x80, 0, 0) + b"\x00\x00\x00\xff\xff\xff"
    image = b"\x2c" + struct.pack("<HHHHB", 0, 0, w, h, 0)
    lzw = b"\x02\x02\x44\x01\x00"
    return head + image + lzw + b"\x3b"


RESIZE_SEED = b"""{ "format": "convscope-network", "version": 1, "name": "resize",
  "input": { "batch": 1, "channels": 2, "height": 5, "width": 7, "source": "random:2" },
  "layers": [
    { "type": "resize", "scale_factor": [2, 1.5], "mode": "linear", "coordinate_transformation_mode": "align_corners" },
    { "type": "resize", "size": [4, 9], "mode": "cubic", "cubic_coeff_a": -0.5, "exclude_outside": true,
      "coordinate_transformation_mode": "half_pixel" },
    { "type": "resize", "scale_factor": 3, "mode": "nearest", "nearest_mode": "round_prefer_ceil",
      "coordinate_transformation_mode": "pytorch_half_pixel" },
    { "type": "resize", "size": [2, 3], "coordinate_transformation_mode": "half_pixel_symmetric" } ] }
"""


# softmax, log_softmax and reduce on a rank-3 tensor (issue 30): every axis form and op the file takes.
AXES_SEED = b"""{ "format": "convscope-network", "version": 1, "name": "axes",
  "input": { "shape": [2, 3, 5], "source": "random:2" },
  "layers": [
    { "type": "softmax", "dim": 0 }, { "type": "log_softmax", "dim": -1 }, { "type": "softmax" },
    { "type": "reduce", "op": "l2", "dim": [0, -1], "keepdim": true },
    { "type": "reduce", "op": "max", "dim": 1 }, { "type": "reduce", "op": "min", "dim": [] },
    { "type": "reduce", "op": "sum" }, { "type": "reduce", "op": "mean", "keepdim": true } ] }
"""


def main():
    for kind in ("npy", "network", "image"):
        shutil.rmtree(os.path.join(HERE, "corpus", kind), ignore_errors=True)
    for d, keep in ((os.path.join(ROOT, "tests", "data", "npy"), None),
                    (os.path.join(ROOT, "tests", "data", "malformed"), ("code_in_header", "count_overflow",
                                                                         "header_past_end_v3", "trailing_text"))):
        for name in sorted(os.listdir(d)):
            if name.endswith(".npy") and (keep is None or name[:-4] in keep):
                with open(os.path.join(d, name), "rb") as f:
                    out("npy", name, f.read())
    nets = os.path.join(ROOT, "resources", "networks")
    for name in sorted(os.listdir(nets)):
        if name.endswith(".json"):
            with open(os.path.join(nets, name), "rb") as f:
                out("network", name, f.read())
    out("network", "every_layer.json", b"""{ "format": "convscope-network", "version": 1, "name": "all",
  "input": { "batch": 2, "channels": 3, "height": 17, "width": 13, "source": "random:3" },
  "layers": [
    { "type": "conv2d", "out_channels": 6, "kernel_size": [3, 5], "stride": [2, 1], "padding": "same",
      "dilation": [1, 2], "groups": 3, "bias": false, "init": { "kind": "uniform", "seed": 4, "low": -1, "high": 2 } },
    { "type": "batchnorm2d", "eps": 1e-5, "running_mean": 0.5, "running_var": [1, 2, 3, 4, 5, 6] },
    { "type": "leaky_relu", "negative_slope": 0.1 },
    { "type": "conv_transpose2d", "out_channels": 4, "kernel_size": [3, 3], "stride": [2, 2],
      "padding": [1, 1, 0, 0], "output_padding": [1, 0], "groups": 2, "init": { "kind": "sobel_x" } },
    { "type": "avgpool2d", "kernel_size": [2, 2], "stride": [2, 2], "ceil_mode": true, "count_include_pad": false },
    { "type": "maxpool2d", "kernel_size": [2, 2], "padding": [1, 1, 1, 1], "dilation": [1, 1] },
    { "type": "elu", "alpha": 0.5 }, { "type": "sigmoid" }, { "type": "tanh" },
    { "type": "global_avgpool2d" }, { "type": "flatten" },
    { "type": "linear", "out_features": 5, "init": { "weight": "w.npy", "bias": "b.npy" } },
    { "type": "softmax" } ] }
""")
    out("network", "skips.json", b"""{ "format": "convscope-network", "version": 1, "name": "skips",
  "input": { "batch": 1, "channels": 2, "height": 7, "width": 6, "source": "random:1" },
  "layers": [
    { "type": "conv2d", "name": "a", "out_channels": 2, "kernel_size": 3, "padding": 1 },
    { "type": "relu6", "name": "r" }, { "type": "hardswish" }, { "type": "hardsigmoid" }, { "type": "silu", "name": "s" },
    { "type": "add", "name": "sum", "inputs": ["input", "r", "s"] },
    { "type": "global_avgpool2d", "name": "g" }, { "type": "mul", "name": "gate", "inputs": ["g", "sum"] },
    { "type": "pad", "name": "p", "padding": [1, 2, 0, 3], "mode": "reflect" },
    { "type": "pad", "padding": 2, "mode": "constant", "value": -1 },
    { "type": "concat", "inputs": ["p", "p"] }, { "type": "identity" }, { "type": "dropout", "p": 0.1 } ] }
""")
    out("network", "resize.json", RESIZE_SEED)
    out("network", "axes.json", AXES_SEED)
    out("network", "features.json", b"""{ "format": "convscope-network", "version": 1,
  "input": { "batch": 4, "features": 10, "source": "x.npy" },
  "layers": [ { "type": "linear", "out_features": 3, "bias": false }, { "type": "relu", "name": "r" } ] }
""")
    seeds = {
        "gray.png": (0, png(5, 4, 0)), "rgb.png": (1, png(6, 3, 2)), "rgba.png": (2, png(3, 3, 6)),
        "palette.png": (1, png(4, 4, 3)), "gray16.png": (0, png(2, 2, 0, 16)), "interlaced.png": (1, png(9, 9, 2, 8, 1)),
        "rgb.bmp": (1, bmp(5, 3)), "rgb.ppm": (1, ppm(4, 2)), "gray.pgm": (0, ppm(3, 3, b"P5")),
        "rgb.tga": (1, tga(3, 2)), "one.gif": (0, gif(2, 2)),
        "huge_header.ppm": (1, b"P6\n1000000 1000000\n255\n" + b"\x00" * 16),
    }
    for name, (prefix, data) in seeds.items():
        out("image", name, bytes([prefix]) + data)


def onnx_seeds():
    cli = os.environ.get("CONVSCOPE_CLI")
    if not cli:
        return
    import subprocess
    d = os.path.join(HERE, "corpus", "onnx")
    os.makedirs(d, exist_ok=True)  # the inputs the fuzzer found stay beside the seeds
    for name in ("classic_filters", "features", "padding_stride_dilation", "skips", "resize", "axes", "norms"):
        subprocess.run([cli, "export", os.path.join(HERE, "corpus", "network", name + ".json"),
                        os.path.join(d, name + ".onnx")], check=True)


def onnx_operator_seeds():
    """One tiny model per family of the operators added for issue 30 (written with the onnx package when it is
    installed: a developer tool, as PyTorch is), so the fuzzer starts inside each converter and the folder's
    shape arithmetic rather than having to find the operator names by mutation."""
    try:
        import numpy as np
        from onnx import TensorProto, helper, numpy_helper
    except ImportError:
        return

    def model(name, nodes, shape, inits=(), opset=17):
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [])
        y.type.tensor_type.ClearField("shape")  # unknown: the importer infers it
        inits = [numpy_helper.from_array(np.asarray(v), k) for k, v in inits]
        g = helper.make_graph(nodes, name, [x], [y], initializer=inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
        m.ir_version = 8
        out("onnx", "ops_" + name + ".onnx", m.SerializeToString())

    n = helper.make_node
    i64 = np.int64
    model("resize", [n("Resize", ["x", "", "s"], ["y"], mode="linear", coordinate_transformation_mode="half_pixel")],
          [1, 2, 3, 4], [("s", np.array([1, 1, 2, 1.5], np.float32))])
    model("reshape_transpose", [n("Reshape", ["x", "t"], ["r"]), n("Transpose", ["r"], ["y"], perm=[0, 2, 1])],
          [1, 2, 3, 4], [("t", np.array([1, 6, -1], i64))])
    model("split", [n("Split", ["x", "s"], ["a", "b"], axis=1), n("Concat", ["b", "a"], ["y"], axis=1)],
          [1, 5, 2, 2], [("s", np.array([2, 3], i64))])
    model("split18", [n("Split", ["x"], ["a", "b"], axis=-1, num_outputs=2), n("Add", ["a", "b"], ["y"])],
          [2, 3, 4], opset=18)
    model("gather_softmax", [n("Gather", ["x", "i"], ["g"], axis=2), n("Softmax", ["g"], ["y"], axis=-1)],
          [1, 3, 4, 5], [("i", np.array([3, 0, 1], i64))])
    model("reduce", [n("ReduceMean", ["x"], ["m"], axes=[-1], keepdims=1), n("ReduceSum", ["m", "a"], ["y"])],
          [2, 3, 4], [("a", np.array([1], i64))], opset=13)
    model("layer_norm", [n("LayerNormalization", ["x", "w", "b"], ["y"], axis=-1, epsilon=1e-5)], [2, 3, 4],
          [("w", np.ones(4, np.float32)), ("b", np.zeros(4, np.float32))])
    model("matmul", [n("MatMul", ["x", "w"], ["y"])], [2, 3, 4], [("w", np.ones((4, 5), np.float32))])
    model("expand_where",
          [n("Shape", ["x"], ["s"]), n("Size", ["x"], ["c"]),
           n("ConstantOfShape", ["k"], ["ones"], value=numpy_helper.from_array(np.array([1], i64))),
           n("Equal", ["s", "ones"], ["eq"]), n("Where", ["eq", "four", "s"], ["t"]), n("Expand", ["x", "t"], ["e"]),
           n("Range", ["z", "c", "c"], ["r"]), n("Cast", ["r"], ["rf"], to=1), n("Add", ["e", "rf"], ["y"])],
          [1, 2, 1, 3], [("k", np.array([4], i64)), ("z", np.array(0, i64)), ("four", np.array([4], i64))])
    model("maths", [n("Abs", ["x"], ["a"]), n("Sqrt", ["a"], ["b"]), n("Exp", ["b"], ["c"]), n("Log", ["c"], ["d"]),
                    n("Neg", ["d"], ["e"]), n("Reciprocal", ["e"], ["f"]), n("Erf", ["f"], ["g"]),
                    n("Pow", ["g", "two"], ["h"]), n("Min", ["h", "x"], ["i"]), n("Max", ["i", "x"], ["j"]),
                    n("Sub", ["j", "x"], ["k"]), n("Div", ["k", "two"], ["l"]), n("Mul", ["l", "x"], ["y"])],
          [1, 2, 3, 3], [("two", np.array([2], np.float32))])
    # Einsum (MaxViT's attention; a constant operand; "..."), stepped and reversed Slice (Swin's patch merging), and
    # MatMul, Gemm, Relu, Sigmoid, Clip of constants (Swin V2's position bias MLP), folded.
    model("einsum", [n("Einsum", ["x", "x"], ["a"], equation="bhid,bhjd->bhij"),
                     n("Einsum", ["a", "w"], ["y"], equation="...j,jk"), ], [1, 2, 3, 4],
          [("w", np.ones((3, 2), np.float32))], opset=12)
    model("einsum_bad", [n("Einsum", ["x"], ["a"], equation="a.b..c->cc"), n("Einsum", ["a"], ["y"], equation="iij")],
          [1, 2, 3, 4], opset=12)  # refused: the fuzzer mutates from a refusal's path too
    # Einsum's diagonal (a label repeated in one term: a reshape and a gather) and three operands, left to right.
    model("einsum_general", [n("Einsum", ["x"], ["a"], equation="bii->bi"),
                             n("Einsum", ["a", "w", "v"], ["y"], equation="bi,ij,jk->bk")], [2, 3, 3],
          [("w", np.ones((3, 4), np.float32)), ("v", np.ones((4, 2), np.float32))], opset=12)
    model("slice_step0", [n("Slice", ["x", "s", "e", "a", "st"], ["y"])], [1, 2, 4, 5],
          [("s", np.array([3], i64)), ("e", np.array([1], i64)), ("a", np.array([-1], i64)),
           ("st", np.array([0], i64))])
    # Swin3D's 8-D window partition (Reshape, Transpose, Reshape: held back, then at most 6-D layers) and torch.roll by
    # 0 (an empty Slice that a Concat leaves out).
    model("wide_view", [n("Reshape", ["x", "w"], ["r"]), n("Transpose", ["r"], ["t"], perm=[0, 1, 3, 5, 2, 4, 6, 7]),
                        n("Reshape", ["t", "f"], ["y"])], [1, 2, 4, 6],
          [("w", np.array([1, 1, 2, 2, 2, 3, 2, 1], i64)), ("f", np.array([0, -1], i64))])
    model("roll0", [n("Slice", ["x", "z", "z", "one"], ["a"]), n("Slice", ["x", "z", "big", "one"], ["b"]),
                    n("Concat", ["a", "b"], ["y"], axis=1)], [1, 3, 2, 2],
          [("z", np.array([0], i64)), ("one", np.array([1], i64)), ("big", np.array([9], i64))])
    model("slice_step", [n("Slice", ["x", "s", "e", "a", "st"], ["y"])], [1, 2, 4, 5],
          [("s", np.array([0, -1], i64)), ("e", np.array([4, -9223372036854775807], i64)),
           ("a", np.array([2, 3], i64)), ("st", np.array([2, -2], i64))])
    model("fold_mlp", [n("MatMul", ["t", "w1"], ["h"]), n("Relu", ["h"], ["r"]), n("Gemm", ["r", "w2", "c"], ["g"]),
                       n("Sigmoid", ["g"], ["s"]), n("Clip", ["s", "lo", "hi"], ["k"]), n("Add", ["x", "k"], ["y"])],
          [1, 2, 3, 4], [("t", np.ones((3, 2), np.float32)), ("w1", np.ones((2, 5), np.float32)),
                         ("w2", np.ones((5, 4), np.float32)), ("c", np.ones(4, np.float32)),
                         ("lo", np.array(0.1, np.float32)), ("hi", np.array(0.9, np.float32))])


if __name__ == "__main__":
    main()
    onnx_seeds()
    onnx_operator_seeds()
