#!/usr/bin/env python3
"""Writes the .npy corpus for tests/compute/npy_test.cpp.

malformed/  hand-made files that every reader must refuse (built byte by byte, so no numpy is needed);
            npy_test.cpp keeps the table of the message each one must produce.
npy/        valid files written by numpy itself (only when numpy is installed), so the reader is checked
            against the real writer and not only against our idea of it.

Run from anywhere:  python3 tests/data/make_malformed.py
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
MAGIC = b"\x93NUMPY"


def header_v1(text, pad=True):
    """A version 1.0 prefix + header, padded like numpy does (to 64 bytes, ending in a newline)."""
    body = text.encode("latin1")
    if pad:
        total = len(MAGIC) + 2 + 2 + len(body) + 1
        body += b" " * ((64 - total % 64) % 64) + b"\n"
    return MAGIC + b"\x01\x00" + struct.pack("<H", len(body)) + body


def floats(*values):
    return struct.pack("<%df" % len(values), *values)


GOOD = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"

MALFORMED = {
    "empty.npy": b"",
    "bad_magic.npy": b"\x93NUMPZ\x01\x00" + header_v1(GOOD)[8:] + floats(*range(6)),
    "text_file.npy": b"this is not a numpy file\n",
    "truncated_version.npy": MAGIC + b"\x01",
    "truncated_length.npy": MAGIC + b"\x01\x00\x10",
    "truncated_length_v2.npy": MAGIC + b"\x02\x00\x10\x00",
    "header_past_end.npy": MAGIC + b"\x01\x00" + struct.pack("<H", 1000) + b"{'descr': '<f4', ",
    "header_past_end_v3.npy": MAGIC + b"\x03\x00" + struct.pack("<I", 0xFFFFFFF0) + b"{'descr'",
    "version_4.npy": MAGIC + b"\x04\x00" + header_v1(GOOD)[8:] + floats(*range(6)),
    "big_endian.npy": header_v1("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }")
    + struct.pack(">2f", 1, 2),
    "int32.npy": header_v1("{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }") + struct.pack("<2i", 1, 2),
    "float16.npy": header_v1("{'descr': '<f2', 'fortran_order': False, 'shape': (2,), }") + b"\x00" * 4,
    "fortran_order.npy": header_v1("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }")
    + floats(*range(6)),
    "missing_shape.npy": header_v1("{'descr': '<f4', 'fortran_order': False, }") + floats(1),
    "missing_descr.npy": header_v1("{'fortran_order': False, 'shape': (1,), }") + floats(1),
    "unknown_key.npy": header_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'extra': 1, }")
    + floats(1),
    "duplicate_key.npy": header_v1("{'descr': '<f4', 'descr': '<f8', 'fortran_order': False, 'shape': (1,), }")
    + floats(1),
    "data_short.npy": header_v1(GOOD) + floats(*range(5)),
    "data_long.npy": header_v1(GOOD) + floats(*range(7)),
    "data_missing.npy": header_v1(GOOD),
    "count_overflow.npy": header_v1(
        "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4), }"),
    "dim_overflow.npy": header_v1(
        "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999,), }"),
    "negative_dim.npy": header_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }"),
    "shape_not_tuple.npy": header_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (3), }") + floats(1, 2, 3),
    "shape_list.npy": header_v1("{'descr': '<f4', 'fortran_order': False, 'shape': [3], }") + floats(1, 2, 3),
    "not_a_dict.npy": header_v1("[1, 2, 3]"),
    "unterminated_dict.npy": header_v1("{'descr': '<f4', 'fortran_order': False", pad=False),
    "code_in_header.npy": header_v1(
        "{'descr': __import__('os').system('echo owned'), 'fortran_order': False, 'shape': (1,), }") + floats(1),
    "structured_dtype.npy": header_v1("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }")
    + floats(1),
    "trailing_text.npy": header_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), } extra") + floats(1),
}


def write_malformed():
    folder = os.path.join(HERE, "malformed")
    os.makedirs(folder, exist_ok=True)
    for name, data in MALFORMED.items():
        with open(os.path.join(folder, name), "wb") as f:
            f.write(data)
    print("wrote %d malformed files to %s" % (len(MALFORMED), folder))


def write_numpy_files():
    try:
        import numpy as np
        from numpy.lib import format as npformat
    except ImportError:
        print("numpy not installed: npy/ left as it is")
        return
    folder = os.path.join(HERE, "npy")
    os.makedirs(folder, exist_ok=True)
    a23 = (np.arange(6, dtype=np.float32) * 0.5 - 1.0).reshape(2, 3)
    np.save(os.path.join(folder, "f32_2x3.npy"), a23)
    np.save(os.path.join(folder, "f64_vector.npy"), np.array([0.1, -2.5, 1e-3, 3.0], dtype=np.float64))
    np.save(os.path.join(folder, "f32_scalar.npy"), np.float32(4.25))
    np.save(os.path.join(folder, "f32_empty.npy"), np.zeros((0, 3), dtype=np.float32))
    nchw = (np.arange(2 * 3 * 4 * 5, dtype=np.float32) / 100.0).reshape(2, 3, 4, 5)
    np.save(os.path.join(folder, "f32_nchw.npy"), nchw)
    for version in [(2, 0), (3, 0)]:
        with open(os.path.join(folder, "f32_2x3_v%d.npy" % version[0]), "wb") as f:
            npformat.write_array(f, a23, version=version)
    # Valid for numpy, refused by us: worth checking they fail with the right words.
    np.save(os.path.join(HERE, "malformed", "numpy_fortran.npy"), np.asfortranarray(a23))
    np.save(os.path.join(HERE, "malformed", "numpy_big_endian.npy"), a23.astype(">f4"))
    np.save(os.path.join(HERE, "malformed", "numpy_int64.npy"), np.arange(4, dtype=np.int64))
    print("wrote numpy files to %s" % folder)


if __name__ == "__main__":
    write_malformed()
    write_numpy_files()
