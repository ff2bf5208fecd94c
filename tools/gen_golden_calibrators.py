#!/usr/bin/env python3
"""Golden vectors for the post-training calibrators (tests/data/golden/calibrators.json).

Runs the peers' own code, CPU only, on stored float32 batches:

  - NVIDIA's HistogramCalibrator and MaxCalibrator from ModelOpt (nvidia-modelopt,
    modelopt/torch/quantization/calib/{histogram,max}.py), the continuation of
    pytorch-quantization's calib/ (the PyPI name pytorch-quantization is a placeholder).
    Collection, entropy and percentile are ModelOpt's code unchanged. For mse, see
    MSE_NOTE below: ModelOpt 0.47 passes its arguments to fake_tensor_quant in
    pytorch-quantization's order, which its own fake_tensor_quant no longer has.
  - PyTorch's HistogramObserver (torch.ao.quantization.observer, torch 2.15).
  - ONNX Runtime's HistogramCollector, the collector behind PercentileCalibrater
    (onnxruntime/quantization/calibrate.py), method "percentile", 2048 bins, 99.999.

Every float is stored as its uint32 bit pattern (tests/golden.hpp), histogram counts that
are integers as "i64", float64 intermediates as {"f64": [uint64 bit patterns]}.

    python3.11 -m venv /work/venv-golden
    /work/venv-golden/bin/pip install -r tools/requirements-golden.txt
    /work/venv-golden/bin/python tools/gen_golden_calibrators.py   # [--out DIR]
"""

import argparse
import json
import os
import sys
import warnings

# torch compiles its CPU kernels once per ISA level; the reductions (sum) and linspace that
# the calibrators go through depend on the vector width, which xquant reproduces for AVX2
# (8 floats). AVX-512 builds would sum in another order.
os.environ.setdefault("ATEN_CPU_CAPABILITY", "avx2")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(1)
warnings.filterwarnings("ignore")

import modelopt  # noqa: E402
import modelopt.torch.quantization.calib.histogram as mo_hist  # noqa: E402
from modelopt.torch.quantization.calib.max import MaxCalibrator  # noqa: E402
from modelopt.torch.quantization.tensor_quant import FakeTensorQuantFunction  # noqa: E402
import onnxruntime  # noqa: E402
from onnxruntime.quantization.calibrate import HistogramCollector  # noqa: E402
import scipy  # noqa: E402
from torch.ao.quantization.observer import HistogramObserver  # noqa: E402

# MSE_NOTE: ModelOpt 0.47's _compute_amax_mse calls fake_tensor_quant(centers, amax, num_bits,
# unsigned), pytorch-quantization's signature (inputs, amax, num_bits, unsigned). ModelOpt's
# fake_tensor_quant is FakeTensorQuantFunction.apply(inputs, amax, bias, num_bits, unsigned, ...),
# so num_bits lands in `bias` and `unsigned` in `num_bits` (an 8-bit signed search runs at 0
# bits on centers shifted by 8; its "amax" is meaningless). The golden mse cases use the
# pytorch-quantization semantics that the research notes and xquant follow: ModelOpt's
# _compute_amax_mse unchanged, with fake_tensor_quant bound by keyword. On the CPU that is
# ModelOpt's legacy _tensor_quant (clamp(round_half_even(x * scale)) / scale), the same code
# as pytorch-quantization's. (pytorch-quantization itself moved the search to .cuda(); the
# CUDA sum would add in another order.)
_modelopt_fake_tensor_quant = mo_hist.fake_tensor_quant


def _pytorch_quantization_fake_tensor_quant(inputs, amax, num_bits=8, unsigned=False, narrow_range=True):
    return FakeTensorQuantFunction.apply(inputs, amax, None, num_bits, unsigned, narrow_range)


def f32(a):
    a = np.asarray(a, dtype=np.float32)
    return {"shape": list(a.shape), "f32": [int(v) for v in a.reshape(-1).view(np.uint32)]}


def f64(a):
    a = np.asarray(a, dtype=np.float64)
    return {"shape": list(a.shape), "f64": [int(v) for v in a.reshape(-1).view(np.uint64)]}


def i64(a):
    a = np.asarray(a, dtype=np.int64)
    return {"shape": list(a.shape), "i64": [int(v) for v in a.reshape(-1)]}


def scalar32(v):
    return f32(np.float32(v))


# Large outputs (histograms, edges, the searches' per-candidate values) are stored as the
# FNV-1a 64-bit hash of their bit patterns (little endian: 4 bytes per float32, 8 per int64
# or float64), which the test recomputes: still a bit-for-bit check, in a file of 1/20 the
# size. --full stores them whole instead (same keys as f32/i64/f64), for debugging.
FULL = False


def fnv1a64(data):
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def digest(kind, a):
    dtype = {"f32": "<f4", "i64": "<i8", "f64": "<f8"}[kind]
    a = np.ascontiguousarray(np.asarray(a).astype(dtype))
    if FULL:
        return {"f32": f32, "i64": i64, "f64": f64}[kind](a)
    return {"shape": list(a.shape), "fnv1a64_" + kind: fnv1a64(a.tobytes())}


# ---------------------------------------------------------------------------------------------
# Inputs: small seeded batches, stored as float32 bits (the C++ side never regenerates them).

def batches(kind, seed, sizes, scales=None, shifts=None):
    rng = np.random.default_rng(seed)
    out = []
    for k, n in enumerate(sizes):
        s = 1.0 if scales is None else scales[k]
        m = 0.0 if shifts is None else shifts[k]
        if kind == "normal":
            x = rng.normal(m, s, n)
        elif kind == "relu":
            x = np.maximum(rng.normal(m, s, n), 0.0)
        elif kind == "heavy":
            x = rng.standard_t(2.0, n) * s + m
        elif kind == "uniform":
            x = rng.uniform(m - s, m + s, n)
        elif kind == "constant":
            x = np.full(n, s, dtype=np.float64)
        elif kind == "zeros":
            x = np.zeros(n)
        else:
            raise ValueError(kind)
        out.append(np.asarray(x, dtype=np.float32))
    return out


DATASETS = {
    "normal": batches("normal", 1, [3000]),
    "relu": batches("relu", 2, [3000]),
    "heavy": batches("heavy", 3, [3000]),
    "uniform": batches("uniform", 4, [2000]),
    "constant": batches("constant", 5, [500], scales=[0.75]),
    # range growth over batches (and a batch that shrinks): where the peers differ most
    "normal_growth": batches("normal", 6, [1500, 1500, 1000, 1500], scales=[0.5, 0.8, 0.4, 1.2]),
    "relu_growth": batches("relu", 7, [1500, 1500, 1500], scales=[1.0, 1.8, 0.5]),
    "heavy_growth": batches("heavy", 8, [1500, 1500, 1500], scales=[1.0, 1.5, 2.5]),
    "shifted_growth": batches("normal", 9, [1500, 1500, 1500], scales=[1.0, 1.0, 2.0], shifts=[2.0, -1.0, 0.5]),
    "constant_then_normal": batches("constant", 10, [300], scales=[1.5]) + batches("normal", 11, [1500]),
}


# ---------------------------------------------------------------------------------------------
# NVIDIA (ModelOpt)

def nvidia_histogram_case(name, key, num_bits=8, unsigned=False, skip_zeros=False, num_bins=2048,
                          methods=None):
    data = DATASETS[key]
    calib = mo_hist.HistogramCalibrator(num_bits=num_bits, axis=None, unsigned=unsigned,
                                        num_bins=num_bins, skip_zeros=skip_zeros)
    steps = []
    for x in data:
        calib.collect(torch.from_numpy(x.copy()))
        steps.append({"tensors": {"hist": digest("f32", calib._calib_hist.numpy()),
                                  "edges": digest("f32", calib._calib_bin_edges.numpy())}})
    results = []
    # The same calibrator answers every method in turn, as a user would call it: the entropy
    # search's bins[0] = bins[1] works on a copy here (compute_amax converts the torch histogram
    # with .int()), so the later methods see the collected histogram unchanged.
    for m in methods or [("entropy", {}), ("mse", {}), ("percentile", {})]:
        method, kw = m
        r = {"method": method, "attrs": dict(kw), "tensors": {}}
        if method == "mse":
            captured = []
            mo_hist.fake_tensor_quant = _pytorch_quantization_fake_tensor_quant
            orig_argmin = np.argmin

            def capture_argmin(a, *args, **kwargs):
                captured.append(np.asarray([float(v) for v in a], dtype=np.float32))
                return orig_argmin(a, *args, **kwargs)

            mo_hist.np.argmin = capture_argmin
            try:
                amax = calib.compute_amax("mse", **kw)
            finally:
                mo_hist.np.argmin = orig_argmin
                mo_hist.fake_tensor_quant = _modelopt_fake_tensor_quant
            r["tensors"]["mses"] = digest("f32", captured[0])
        elif method == "entropy":
            captured = []
            orig_argmin = np.argmin

            def capture_argmin(a, *args, **kwargs):
                captured.append(np.array(a[::-1], dtype=np.float64))  # called on divergences[::-1]
                return orig_argmin(a, *args, **kwargs)

            mo_hist.np.argmin = capture_argmin
            try:
                amax = calib.compute_amax("entropy", **kw)
            finally:
                mo_hist.np.argmin = orig_argmin
            r["tensors"]["divergences"] = digest("f64", captured[0])
        else:
            amax = calib.compute_amax(method, **kw)
        r["tensors"]["amax"] = scalar32(amax.item())
        results.append(r)
    return {"op": "nvidia.histogram_calibrator", "name": name, "input": key,
            "attrs": {"num_bits": num_bits, "unsigned": unsigned, "skip_zeros": skip_zeros,
                      "num_bins": num_bins},
            "steps": steps, "results": results}


def nvidia_max_case(name, key, unsigned=False):
    data = DATASETS[key]
    calib = MaxCalibrator(num_bits=8, axis=None, unsigned=unsigned)
    steps = []
    for x in data:
        calib.collect(torch.from_numpy(x.copy()))
        steps.append({"tensors": {"amax": scalar32(calib.compute_amax().item())}})
    return {"op": "nvidia.max_calibrator", "name": name, "input": key, "attrs": {"unsigned": unsigned}, "steps": steps}


# ---------------------------------------------------------------------------------------------
# PyTorch HistogramObserver

DTYPES = {"quint8": torch.quint8, "qint8": torch.qint8}
QSCHEMES = {"per_tensor_affine": torch.per_tensor_affine, "per_tensor_symmetric": torch.per_tensor_symmetric}


def torch_histogram_case(name, key, dtype="quint8", qscheme="per_tensor_affine", reduce_range=False,
                         bins=2048):
    data = DATASETS[key]
    obs = HistogramObserver(bins=bins, dtype=DTYPES[dtype], qscheme=QSCHEMES[qscheme],
                            reduce_range=reduce_range)
    steps = []
    for x in data:
        obs(torch.from_numpy(x.copy()))
        steps.append({"tensors": {"histogram": digest("f32", obs.histogram.numpy()),
                                  "min_val": scalar32(obs.min_val.item()),
                                  "max_val": scalar32(obs.max_val.item())}})
    new_min, new_max = obs._non_linear_param_search()
    scale, zero_point = obs.calculate_qparams()
    return {"op": "torch.histogram_observer", "name": name, "input": key,
            "attrs": {"bins": bins, "dtype": dtype, "qscheme": qscheme, "reduce_range": reduce_range},
            "steps": steps,
            "results": [{"tensors": {"new_min": scalar32(new_min.item()), "new_max": scalar32(new_max.item()),
                                     "scale": scalar32(scale.reshape(-1)[0].item()),
                                     "zero_point": i64([int(zero_point.reshape(-1)[0].item())])}}]}


# ---------------------------------------------------------------------------------------------
# ONNX Runtime PercentileCalibrater's collector

def ort_percentile_case(name, key, symmetric=False, num_bins=2048, percentile=99.999):
    data = DATASETS[key]
    col = HistogramCollector(method="percentile", symmetric=symmetric, num_bins=num_bins,
                             num_quantized_bins=128, percentile=percentile, scenario="same")
    steps = []
    devnull = open(os.devnull, "w")
    for x in data:
        stdout, sys.stdout = sys.stdout, devnull  # the collector prints progress lines
        try:
            col.collect({"t": x.copy()})
        finally:
            sys.stdout = stdout
        h = col.histogram_dict["t"]
        t = {"hist": digest("i64", h[0]), "edges": digest("f32", h[1]), "min": scalar32(h[2]),
             "max": scalar32(h[3])}
        if not symmetric:
            t["threshold"] = scalar32(h[4])
        steps.append({"tensors": t})
    stdout, sys.stdout = sys.stdout, devnull
    try:
        lo, hi = col.compute_collection_result()["t"][:2]
    finally:
        sys.stdout = stdout
    return {"op": "ort.percentile_calibrator", "name": name, "input": key,
            "attrs": {"symmetric": symmetric, "num_bins": num_bins},
            "tensors": {"percentile": f64(np.float64(percentile))},
            "steps": steps,
            "results": [{"tensors": {"min": scalar32(lo), "max": scalar32(hi)}}]}


# ---------------------------------------------------------------------------------------------

def build_cases():
    cases = []
    # NVIDIA histogram: every distribution, every method; widths and signedness.
    for key in ["normal", "relu", "heavy", "uniform", "constant", "normal_growth", "relu_growth",
                "heavy_growth", "shifted_growth", "constant_then_normal"]:
        cases.append(nvidia_histogram_case(f"{key}_int8", key))
    cases.append(nvidia_histogram_case("relu_uint8", "relu", unsigned=True))
    cases.append(nvidia_histogram_case("relu_growth_uint8_skip_zeros", "relu_growth", unsigned=True,
                                       skip_zeros=True))
    cases.append(nvidia_histogram_case("normal_int4", "normal", num_bits=4))
    cases.append(nvidia_histogram_case("heavy_growth_int6", "heavy_growth", num_bits=6))
    cases.append(nvidia_histogram_case("normal_growth_uint7", "normal_growth", num_bits=7, unsigned=True))
    cases.append(nvidia_histogram_case(
        "heavy_options", "heavy", num_bins=512,
        methods=[("entropy", {"stride": 3, "start_bin": 64}), ("mse", {"stride": 2, "start_bin": 10}),
                 ("percentile", {"percentile": 99.9}), ("percentile", {"percentile": 100.0}),
                 ("percentile", {"percentile": 0.0}), ("percentile", {"percentile": 50.0})]))
    cases.append(nvidia_histogram_case(
        "normal_growth_percentiles", "normal_growth",
        methods=[("percentile", {"percentile": p}) for p in (99.0, 99.9, 99.99, 99.999, 100.0)]))
    # NVIDIA max
    for key in ["normal", "normal_growth", "heavy_growth", "shifted_growth"]:
        cases.append(nvidia_max_case(key, key))
    # PyTorch HistogramObserver
    for key in ["normal", "relu", "heavy", "uniform", "constant", "normal_growth", "relu_growth",
                "heavy_growth", "shifted_growth", "constant_then_normal"]:
        cases.append(torch_histogram_case(f"{key}_quint8_affine", key))
    cases.append(torch_histogram_case("normal_growth_qint8_symmetric", "normal_growth", dtype="qint8",
                                      qscheme="per_tensor_symmetric"))
    cases.append(torch_histogram_case("shifted_growth_qint8_affine_reduce", "shifted_growth", dtype="qint8",
                                      reduce_range=True))
    cases.append(torch_histogram_case("relu_quint8_symmetric", "relu", qscheme="per_tensor_symmetric"))
    cases.append(torch_histogram_case("heavy_qint8_symmetric_reduce", "heavy", dtype="qint8",
                                      qscheme="per_tensor_symmetric", reduce_range=True))
    cases.append(torch_histogram_case("uniform_quint8_affine_reduce", "uniform", reduce_range=True))
    # ONNX Runtime percentile
    for key in ["normal", "relu", "heavy", "uniform", "constant", "normal_growth", "relu_growth",
                "heavy_growth", "shifted_growth", "constant_then_normal"]:
        cases.append(ort_percentile_case(key, key))
        cases.append(ort_percentile_case(f"{key}_symmetric", key, symmetric=True))
    cases.append(ort_percentile_case("heavy_growth_p99", "heavy_growth", percentile=99.0))
    cases.append(ort_percentile_case("shifted_growth_symmetric_p99_9", "shifted_growth", symmetric=True,
                                     percentile=99.9))
    return cases


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests", "data", "golden"))
    parser.add_argument("--full", action="store_true", help="store large outputs whole, not hashed")
    args = parser.parse_args()
    global FULL
    FULL = args.full
    cases = build_cases()
    names = set()
    for c in cases:
        key = (c["op"], c["name"])
        assert key not in names, key
        names.add(key)
    doc = {
        "generator": "tools/gen_golden_calibrators.py",
        "versions": {"python": sys.version.split()[0], "numpy": np.__version__, "torch": torch.__version__,
                     "nvidia-modelopt": modelopt.__version__, "onnxruntime": onnxruntime.__version__,
                     "scipy": scipy.__version__,
                     "ATEN_CPU_CAPABILITY": os.environ.get("ATEN_CPU_CAPABILITY")},
        "hash": "fnv1a64 of the little-endian bit patterns (see digest())",
        # every case's batches, by "input" name: each a list of float32 tensors
        "inputs": {k: [f32(x) for x in v] for k, v in DATASETS.items()},
        "cases": cases,
    }
    path = os.path.join(args.out, "calibrators.json")
    with open(path, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")
    counts = {}
    for c in cases:
        counts[c["op"]] = counts.get(c["op"], 0) + 1
    for op, n in counts.items():
        print(f"{op}: {n} cases")
    print(f"wrote {path} ({os.path.getsize(path)} bytes)")


if __name__ == "__main__":
    main()
