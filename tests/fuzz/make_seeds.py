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
    for name in ("classic_filters", "features", "padding_stride_dilation", "skips", "resize", "norms"):
        subprocess.run([cli, "export", os.path.join(HERE, "corpus", "network", name + ".json"),
                        os.path.join(d, name + ".onnx")], check=True)


if __name__ == "__main__":
    main()
    onnx_seeds()
