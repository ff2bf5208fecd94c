#!/usr/bin/env python3
"""Golden values for xq::bop: a few steps of Larq's Bop optimizer (larq/optimizers.py).

Output: tests/data/golden/larq_bop.json, read by tests/train/test_bop.cpp.

Each case starts two float32 tf.Variables (shapes (3, 4) and (5,)) from ±1 values (one
edge case has other values too), feeds seeded random gradients to `lq.optimizers.Bop`
through `apply_gradients` for several steps and records, after every step, the variables
and Bop's slot "m".  Bop's update, per variable:

    m_t = m.assign_add(gamma * (grad - m))
    w   = lq.math.sign(-tf.sign(w * m_t - threshold) * w)

Cases: the defaults (threshold 1e-8, gamma 1e-4), other hyper-parameters, a gradient left
out at some steps (Keras then does not touch that variable or its slot), gamma and
threshold as schedules (PiecewiseConstantDecay, read at `optimizer.iterations` = updates
done before this one), and an edge case: w * m_t == threshold exactly (tf.sign gives 0,
lq.math.sign(0) = +1, so -1 becomes +1), weights that are 0 or not ±1, and NaN gradients.

Format: {"generator", "versions", "cases": [...]}; a case has "name", "options"
({"threshold", "gamma"}: JSON numbers, or {"boundaries", "values"} for a schedule),
"initial" (list of tensors) and "steps": a list of {"gamma", "threshold" (the float32
values used at that step, as tensors of shape []), "grads" (a tensor or null per
variable), "params", "m" (a tensor per variable, null while its slot does not exist)}.
Tensors are {"shape", "f32": [uint32 bit patterns]} as in tools/gen_golden.py.

Needs Larq 0.14 on TensorFlow with the legacy Keras (tf_keras):
    TF_USE_LEGACY_KERAS=1 /work/venv-golden/bin/python tools/gen_golden_larq_bop.py [--out DIR]
Deterministic: fixed seeds, CPU, single-threaded; a second run gives the same file.
"""

import os

os.environ["CUDA_VISIBLE_DEVICES"] = ""
os.environ["TF_USE_LEGACY_KERAS"] = "1"
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

tf.config.threading.set_inter_op_parallelism_threads(1)
tf.config.threading.set_intra_op_parallelism_threads(1)

import larq as lq  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(REPO, "tests", "data", "golden")
SHAPES = [(3, 4), (5,)]


def enc(a):
    a = np.array(a.numpy() if hasattr(a, "numpy") else a, dtype=np.float32, order="C")
    return {"shape": [int(s) for s in a.shape], "f32": [int(v) for v in a.reshape(-1).view(np.uint32)]}


def hyper(opt, name):
    """The float32 value Bop uses for `name` at the coming step (as _get_decayed_hyper)."""
    return opt._get_decayed_hyper(name, tf.float32)


def run_case(name, options, seed, steps=6, grad_scale=1e-3, missing=(), initial=None, grads_fn=None):
    """missing: (step, variable index) pairs left out of apply_gradients."""
    rng = np.random.default_rng(seed)
    if initial is None:
        initial = [np.where(rng.random(s) < 0.5, -1.0, 1.0).astype(np.float32) for s in SHAPES]
    variables = [tf.Variable(v) for v in initial]

    def make(o):
        if isinstance(o, dict):
            return tf.keras.optimizers.schedules.PiecewiseConstantDecay(o["boundaries"], o["values"])
        return o

    opt = lq.optimizers.Bop(threshold=make(options["threshold"]), gamma=make(options["gamma"]))
    case = {"name": name, "options": options, "initial": [enc(v) for v in initial], "steps": []}
    for k in range(steps):
        grads = []
        pairs = []
        for i, v in enumerate(variables):
            if grads_fn is not None:
                g = grads_fn(k, i)
            else:
                # seeded noise; at these scales most steps flip some weights
                g = (rng.standard_normal(v.shape) * grad_scale).astype(np.float32)
            if g is None or (k, i) in missing:
                grads.append(None)
                continue
            g = np.asarray(g, dtype=np.float32)
            grads.append(enc(g))
            pairs.append((tf.constant(g), v))
        gamma, threshold = hyper(opt, "gamma"), hyper(opt, "threshold")  # before this step's update
        opt.apply_gradients(pairs)
        ms = []
        for v in variables:
            try:
                ms.append(enc(opt.get_slot(v, "m")))
            except KeyError:
                ms.append(None)
        case["steps"].append({"gamma": enc(gamma), "threshold": enc(threshold), "grads": grads,
                              "params": [enc(v) for v in variables], "m": ms})
    return case


def edge_case():
    """gamma 1 makes m_t = 0 + 1 * (g - 0) = g exactly at the first step, so the
    gradients choose w * m_t - threshold exactly: 0 (tf.sign 0, lq.math.sign(0) = +1)."""
    t = np.float32(0.25)
    w0 = np.array([[1, -1, 1, -1], [1, -1, 0, 0], [0.5, -2, 1, -1]], dtype=np.float32)
    g0 = np.array([[t, -t, -t, t], [2 * t, -2 * t, 1, -1], [1, 1, np.nan, 0]], dtype=np.float32)
    w1 = np.array([1, -1, 1, -1, 1], dtype=np.float32)
    g1 = np.array([t / 2, -t / 2, 0, np.inf, -np.inf], dtype=np.float32)

    def grads(k, i):
        if k == 0:
            return g0 if i == 0 else g1
        rng = np.random.default_rng(100 + k)
        return (rng.standard_normal(SHAPES[i]) * 0.5).astype(np.float32)

    return run_case("edge_exact_threshold_zero_nonbinary_nan",
                    {"threshold": float(t), "gamma": 1.0}, 99, steps=3, initial=[w0, w1], grads_fn=grads)


def cases():
    yield run_case("defaults", {"threshold": 1e-8, "gamma": 1e-4}, 1, grad_scale=1e-3)
    yield run_case("defaults_large_grads", {"threshold": 1e-8, "gamma": 1e-4}, 2, grad_scale=1.0)
    yield run_case("threshold_1e-6_gamma_1e-3", {"threshold": 1e-6, "gamma": 1e-3}, 3, grad_scale=1e-3, steps=8)
    yield run_case("threshold_0.05_gamma_0.3", {"threshold": 0.05, "gamma": 0.3}, 4, grad_scale=0.5, steps=8)
    yield run_case("missing_grad", {"threshold": 1e-5, "gamma": 1e-2}, 5, grad_scale=1e-2,
                   missing={(0, 1), (2, 1), (3, 0)})
    yield run_case("schedules",
                   {"threshold": {"boundaries": [2], "values": [1e-5, 1e-3]},
                    "gamma": {"boundaries": [1, 3], "values": [0.1, 0.01, 0.5]}},
                   6, grad_scale=0.05, steps=6)
    yield edge_case()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=DEFAULT_OUT)
    args = ap.parse_args()
    all_cases = list(cases())
    versions = {"tensorflow": tf.__version__, "larq": lq.__version__,
                "numpy": np.__version__}
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "larq_bop.json")
    with open(path, "w") as fh:
        fh.write('{"generator": "tools/gen_golden_larq_bop.py",\n')
        fh.write(' "versions": %s,\n' % json.dumps(versions, sort_keys=True))
        fh.write(' "cases": [\n')
        for i, c in enumerate(all_cases):
            fh.write(json.dumps(c, separators=(",", ":")))
            fh.write(",\n" if i + 1 < len(all_cases) else "\n")
        fh.write(']}\n')
    print("%s: %d cases" % (path, len(all_cases)), file=sys.stderr)


if __name__ == "__main__":
    main()
