#!/usr/bin/env python3
"""Writes the small .npy files in tests/data/npy/ with numpy itself, so that
tests/io/test_npy.cpp checks xq::io::load_npy against files numpy wrote (and
xq::io::save_npy's bytes against numpy's np.save).

    /work/venv-golden/bin/python tools/gen_npy_samples.py [out_dir]

Deterministic: running it again gives the same bytes (with the same numpy major
version). The expected values are restated in tests/io/test_npy.cpp.
"""
import os
import sys

import numpy as np
from numpy.lib import format as npy_format

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "tests", "data", "npy")


def save(name, array, version=None):
    path = os.path.join(OUT, name)
    if version is None:
        np.save(path, array, allow_pickle=False)
    else:
        with open(path, "wb") as f:
            npy_format.write_array(f, array, version=version, allow_pickle=False)
    print(f"{name}: {array.dtype.str} shape {array.shape} "
          f"fortran={array.flags.f_contiguous and not array.flags.c_contiguous}")


def main():
    os.makedirs(OUT, exist_ok=True)
    # float32 with every special case, given as bit patterns: 1, -1.5, -0, the smallest
    # denormal, a quiet NaN with a payload, -inf.
    bits = np.array([0x3F800000, 0xBFC00000, 0x80000000, 0x00000001, 0x7FC12345, 0xFF800000],
                    dtype="<u4")
    save("f4_2x3.npy", bits.view("<f4").reshape(2, 3))
    save("f8_3.npy", np.array([0.1, -2.5, 1e300], dtype="<f8"))
    save("u1_2x2.npy", np.array([[0, 1], [254, 255]], dtype="|u1"))
    save("i4_4.npy", np.array([-2**31, -1, 0, 2**31 - 1], dtype="<i4"))
    save("i8_3.npy", np.array([-2**40, 0, 2**53 + 1], dtype="<i8"))
    save("b1_3.npy", np.array([True, False, True]))
    save("i2_be_3.npy", np.array([-300, 7, 32767], dtype=">i2"))
    save("f4_be_2x2.npy", (np.arange(4).reshape(2, 2) - 1.5).astype(">f4"))
    # np.save writes an F-contiguous array as fortran_order True, data in column order.
    save("f4_fortran_2x3.npy", np.asfortranarray(np.arange(6, dtype="<f4").reshape(2, 3)))
    save("f4_fortran_2x3x4.npy", np.asfortranarray(np.arange(24, dtype="<f4").reshape(2, 3, 4)))
    save("f4_scalar.npy", np.array(3.5, dtype="<f4"))
    save("f4_empty_0x3.npy", np.zeros((0, 3), dtype="<f4"))
    save("f4_v2_3.npy", np.array([1, 2, 3], dtype="<f4"), version=(2, 0))
    save("f4_v3_3.npy", np.array([1, 2, 3], dtype="<f4"), version=(3, 0))
    # Not loadable as float32: complex, structured.
    save("c8_2.npy", np.array([1 + 2j, 3 - 4j], dtype="<c8"))
    save("structured_2.npy", np.zeros(2, dtype=[("a", "<f4"), ("b", "<i4")]))


if __name__ == "__main__":
    main()
