#!/usr/bin/env python3
"""tools/onnx_check.py's rule for float outputs (CTest: onnx.check_float_rule, label onnx).

    python3 tests/tools/onnx_check_float_rule.py --checker tools/onnx_check.py --out DIR

A quantized file whose output is float (a conv whose sums leave as floats), beside its
exposed integers: QuantizeLinear -> DequantizeLinear -> Conv (int8 weights dequantized) ->
the float output `y`, and the QuantizeLinear's integers `xq`. The expected `y` is what an
integer engine computes, the exact int32 sums times sx*sw plus the bias, so onnxruntime's
float conv differs from it by float rounding only, while every integer agrees. The default
rule (range) must pass it; the strict rule (--float-rule elementwise) fails it, as the
default did before issue 34 (finding 14); a wrong integer fails either way. Exit 77 (CTest:
skipped) without onnx, onnxruntime and numpy.
"""

import argparse
import os
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--checker", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    try:
        import numpy as np
        import onnx
        from onnx import TensorProto, helper, numpy_helper
    except ImportError as e:
        print(f"onnx_check_float_rule: skipped: {e} (scripts/install_onnx_deps.sh)")
        return 77

    os.makedirs(args.out, exist_ok=True)
    rng = np.random.default_rng(0)
    n, h, w, c, f, k = 8, 16, 16, 32, 16, 3
    sx, sw = np.float32(0.02), np.float32(0.004)
    x = rng.normal(0, 1, (n, c, h, w)).astype(np.float32)
    wq = rng.integers(-127, 128, (f, c, k, k)).astype(np.int8)
    bias = rng.normal(0, 0.1, (f,)).astype(np.float32)
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "sx", "zx"], ["xq"]),
        helper.make_node("DequantizeLinear", ["xq", "sx", "zx"], ["xd"]),
        helper.make_node("DequantizeLinear", ["wq", "sw", "zw"], ["wd"]),
        helper.make_node("Conv", ["xd", "wd", "b"], ["y"], pads=[1, 1, 1, 1]),
    ]
    inits = [numpy_helper.from_array(np.array(sx), "sx"), numpy_helper.from_array(np.array(0, np.int8), "zx"),
             numpy_helper.from_array(wq, "wq"), numpy_helper.from_array(np.array(sw), "sw"),
             numpy_helper.from_array(np.array(0, np.int8), "zw"), numpy_helper.from_array(bias, "b")]
    graph = helper.make_graph(
        nodes, "float_output", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, c, h, w])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, f, h, w]),
         helper.make_tensor_value_info("xq", TensorProto.INT8, [n, c, h, w])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    path = os.path.join(args.out, "float_output.onnx")
    onnx.save(model, path)

    # The integer engine's way: exact int32 sums (QuantizeLinear rounds half to even, as np.round).
    xq = np.clip(np.round(x / sx), -128, 127).astype(np.int64)
    padded = np.pad(xq, ((0, 0), (0, 0), (1, 1), (1, 1)))
    acc = np.zeros((n, f, h, w), np.int64)
    for i in range(k):
        for j in range(k):
            acc += np.einsum("nchw,fc->nfhw", padded[:, :, i:i + h, j:j + w], wq[:, :, i, j].astype(np.int64))
    y = (acc.astype(np.float32) * np.float32(sx * sw) + bias[None, :, None, None]).astype(np.float32)
    files = {name: os.path.join(args.out, name + ".npy") for name in ("x", "y", "xq", "xq_wrong")}
    np.save(files["x"], x)
    np.save(files["y"], y)
    np.save(files["xq"], xq.astype(np.int8))
    wrong = xq.astype(np.int8).copy()
    wrong.flat[0] += 1 if wrong.flat[0] < 127 else -1
    np.save(files["xq_wrong"], wrong)

    def check(*extra, xq_file=files["xq"]):
        cmd = [sys.executable, args.checker, path, "--input", "x=" + files["x"], "--expected", "y=" + files["y"],
               "--expected", "xq=" + xq_file, "--exact-integers", *extra]
        run = subprocess.run(cmd, capture_output=True, text=True)
        print("$ " + " ".join(cmd) + "\n" + run.stdout + run.stderr)
        return run.returncode

    failures = []
    if check() != 0:
        failures.append("the default rule (range) fails a float output whose integers all agree")
    status = check("--float-rule", "elementwise")
    if status != 1:
        failures.append(f"the strict rule (--float-rule elementwise) does not fail it (exit status {status}, "
                        "not 1): the case no longer tests the difference")
    if check(xq_file=files["xq_wrong"]) != 1:
        failures.append("a wrong integer passes")
    for f_ in failures:
        print("onnx_check_float_rule: FAILED: " + f_)
    if not failures:
        print("onnx_check_float_rule: passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
