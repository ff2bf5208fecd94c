#!/usr/bin/env python3
"""Generate golden vectors for xquant's Larq quantizers by running larq itself.

Peer: larq 0.14 (`larq.quantizers`, `larq.metrics.FlipRatio`) on TensorFlow 2.21 with
tf_keras (larq needs TF_USE_LEGACY_KERAS=1, set below).  CPU, float32, eager.

Output: tests/data/golden/larq_quantizers.json (format: tools/README.md, as gen_golden.py
writes it).  Every float32 is stored as its uint32 bit pattern, so NaN, Inf and -0.0
survive and the C++ tests compare bit for bit.

Each quantizer case holds the input `x`, a random upstream gradient `dy`, larq's output
`y` and the input gradient `dx` (tf.GradientTape with output_gradients=dy).  Quantizer
parameters that are floats are stored as scalar tensors (`clip_value`, `beta`,
`threshold_value`); `attrs` holds ints, bools, strings and null (`clip_value: null` is
larq's clip_value=None).

Reductions: MagnitudeAwareSign's per-channel mean and SteTern's TWN threshold are sums
that TF adds in an order that depends on its build (packet width, unrolling).  Their
inputs are therefore drawn on a dyadic grid (multiples of 2^-12 below 8 in magnitude),
where every partial sum is exact in float32 whatever the order: the goldens hold then for
any correct summation.

The script is deterministic (fixed seeds, one TF thread): a second run gives
byte-identical files.

Usage:  TF_USE_LEGACY_KERAS=1 /work/venv-golden/bin/python tools/gen_golden_larq.py [--out DIR] [-q]
"""

import os

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")  # larq 0.14 needs Keras 2 (tf_keras)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ["CUDA_VISIBLE_DEVICES"] = ""  # CPU kernels only

import argparse
import json
import sys
import warnings

import numpy as np

warnings.simplefilter("ignore")

import tensorflow as tf  # noqa: E402

tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(1)

import larq as lq  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(REPO, "tests", "data", "golden")
FILE = "larq_quantizers.json"

F = np.float32
NAN, PINF, NINF = F(np.nan), F(np.inf), F(-np.inf)


def bits2f(u):
    return np.array([u], dtype=np.uint32).view(np.float32)[0]


DENORM_MIN = bits2f(0x00000001)
FLT_MIN = bits2f(0x00800000)
FLT_MAX = bits2f(0x7F7FFFFF)

# Values that expose corner cases of every quantizer (finite).
GENERIC = [
    F(0.0), F(-0.0), DENORM_MIN, -DENORM_MIN, FLT_MIN, -FLT_MIN, F(1e-20), F(-1e-20),
    F(0.25), F(-0.25), F(0.5), F(-0.5), F(0.75), F(-0.75), F(1.0), F(-1.0), F(1.5), F(-1.5),
    F(2.0), F(-2.0), F(10.0), F(-10.0), F(1e30), F(-1e30), FLT_MAX, -FLT_MAX,
]
SPECIAL = [NAN, PINF, NINF]


# ----------------------------------------------------------------------------
# encoding
# ----------------------------------------------------------------------------

def enc(a):
    a = np.array(a.numpy() if hasattr(a, "numpy") else a, order="C")
    if a.dtype == np.float32:
        return {"shape": [int(s) for s in a.shape], "f32": [int(v) for v in a.reshape(-1).view(np.uint32)]}
    if a.dtype.kind in "iub":
        return {"shape": [int(s) for s in a.shape], "i64": [int(v) for v in a.reshape(-1).astype(np.int64)]}
    raise TypeError("refusing to encode dtype %s" % a.dtype)


def scalar(v):
    return np.array(F(v), dtype=np.float32)


class Family:
    def __init__(self, fname):
        self.fname = fname
        self.cases = []
        self.names = set()

    def add(self, op, name, attrs, tensors, steps=None, special=False):
        if (op, name) in self.names:
            raise ValueError("duplicate case %s %s" % (op, name))
        for k, v in attrs.items():
            if not (v is None or isinstance(v, (bool, int, str))):
                raise TypeError("attr %s of %s has type %s" % (k, name, type(v)))
        case = {"op": op, "name": name, "attrs": attrs, "tensors": {k: enc(v) for k, v in tensors.items()}}
        if steps is not None:
            case["steps"] = [{k: (enc(v) if not isinstance(v, bool) else v) for k, v in st.items()} for st in steps]
        nonfinite = any(np.asarray(v).dtype == np.float32 and not np.all(np.isfinite(v)) for v in tensors.values())
        if special or nonfinite:
            case["special"] = True
        self.names.add((op, name))
        self.cases.append(case)

    def write(self, outdir, versions):
        path = os.path.join(outdir, self.fname)
        with open(path, "w", encoding="ascii", newline="\n") as fh:
            fh.write('{"generator": "tools/gen_golden_larq.py",\n')
            fh.write(' "versions": %s,\n' % json.dumps(versions, sort_keys=True))
            fh.write(' "cases": [\n')
            for i, c in enumerate(self.cases):
                fh.write(json.dumps(c, separators=(",", ":")))
                fh.write(",\n" if i + 1 < len(self.cases) else "\n")
            fh.write("]}\n")
        return path


# ----------------------------------------------------------------------------
# value helpers
# ----------------------------------------------------------------------------

def around(v, k=1):
    """v and its k float32 neighbours on either side."""
    v = F(v)
    out, lo, hi = [v], v, v
    for _ in range(k):
        lo, hi = np.nextafter(lo, NINF), np.nextafter(hi, PINF)
        out += [lo, hi]
    return out


def pm(vals):
    """Each value and its negation."""
    return [F(v) for v in vals] + [F(-v) for v in vals]


def uniq(vals):
    seen, out = set(), []
    for v in vals:
        v = F(v)
        b = int(np.array([v], np.float32).view(np.uint32)[0])
        if b not in seen:
            seen.add(b)
            out.append(v)
    return out


def arr(vals):
    return np.array(uniq(vals), dtype=np.float32)


def normal(rng, shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def dyadic(rng, shape, scale=1.0):
    """N(0, scale) rounded to multiples of 2^-12, |v| < 8: sums are exact in float32."""
    v = np.clip(np.round(rng.standard_normal(shape) * scale * 4096.0), -32767, 32767) / 4096.0
    return v.astype(np.float32)


# ----------------------------------------------------------------------------
# running larq
# ----------------------------------------------------------------------------

def run_quantizer(q, x, dy):
    """larq's output and input gradient for upstream gradient dy."""
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        y = q(xt)
    dx = tape.gradient(y, xt, output_gradients=tf.constant(dy))
    if dx is None:
        dx = tf.zeros_like(xt)
    return y.numpy(), dx.numpy()


def add_case(fam, op, name, make, x, rng, attrs=None, params=None):
    x = np.asarray(x, dtype=np.float32)
    dy = normal(rng, x.shape)
    y, dx = run_quantizer(make(), x, dy)
    tensors = {"x": x, "dy": dy, "y": y, "dx": dx}
    for k, v in (params or {}).items():
        tensors[k] = scalar(v)
    fam.add(op, name, dict(attrs or {}), tensors)


CLIPS = [("clip1", 1.0), ("clip0.5", 0.5), ("clipnone", None)]


def clip_args(clip):
    """(attrs, params) for a clip_value."""
    if clip is None:
        return {"clip_value": None}, {}
    return {}, {"clip_value": clip}


def gen_clipped(fam, op, cls, rng, shapes):
    for tag, clip in CLIPS:
        attrs, params = clip_args(clip)
        c = 1.0 if clip is None else clip
        edge = arr(GENERIC + pm(around(c, 2)) + pm(around(0.5, 1)))
        add_case(fam, op, "%s_edge" % tag, lambda: cls(clip_value=clip), edge, rng, attrs, params)
        add_case(fam, op, "%s_special" % tag, lambda: cls(clip_value=clip), arr(SPECIAL + [F(0), F(2)]), rng,
                 attrs, params)
        for shape in shapes:
            add_case(fam, op, "%s_random_%s" % (tag, "x".join(map(str, shape))), lambda: cls(clip_value=clip),
                     normal(rng, shape, 1.2), rng, attrs, params)


def gen_ste_sign(fam, rng):
    gen_clipped(fam, "larq.quantizers.SteSign", lq.quantizers.SteSign, rng, [(5, 7), (2, 3, 3, 4)])


def gen_ste_heaviside(fam, rng):
    gen_clipped(fam, "larq.quantizers.SteHeaviside", lq.quantizers.SteHeaviside, rng, [(5, 7)])


def gen_approx_sign(fam, rng):
    op = "larq.quantizers.ApproxSign"
    edge = arr(GENERIC + pm(around(1.0, 2)) + pm(around(0.5, 1)) + pm([0.125, 0.999, 1e-7]))
    add_case(fam, op, "edge", lq.quantizers.ApproxSign, edge, rng)
    add_case(fam, op, "special", lq.quantizers.ApproxSign, arr(SPECIAL + [F(0)]), rng)
    for shape in [(5, 7), (2, 3, 3, 4)]:
        add_case(fam, op, "random_%s" % "x".join(map(str, shape)), lq.quantizers.ApproxSign,
                 normal(rng, shape), rng)


def gen_swish_sign(fam, rng):
    op = "larq.quantizers.SwishSign"
    for beta in (5.0, 2.0, 10.0):
        tag = "beta%g" % beta
        make = lambda: lq.quantizers.SwishSign(beta=beta)
        # Large |x|: cosh overflows (gradient +-0); huge |x|: beta*x overflows (NaN gradient).
        edge = arr(GENERIC + pm([0.1, 0.2, 0.4, 1e-4, 3.0, 5.0, 17.0, 18.0, 20.0, 40.0, 1e5]))
        add_case(fam, op, "%s_edge" % tag, make, edge, rng, {}, {"beta": beta})
        add_case(fam, op, "%s_special" % tag, make, arr(SPECIAL + [F(0)]), rng, {}, {"beta": beta})
        add_case(fam, op, "%s_random_6x6" % tag, make, normal(rng, (6, 6), 0.6), rng, {}, {"beta": beta})


def gen_magnitude_aware_sign(fam, rng):
    op = "larq.quantizers.MagnitudeAwareSign"
    cls = lq.quantizers.MagnitudeAwareSign
    for tag, clip in CLIPS:
        attrs, params = clip_args(clip)
        make = lambda: cls(clip_value=clip)
        # rank 1: larq averages over no axis, so the scale is |x| itself.
        edge = arr([F(0), F(-0.0), F(0.5), F(-0.5), F(1.0), F(-1.0), F(1.25), F(-3.0), F(0.375)])
        add_case(fam, op, "%s_rank1" % tag, make, edge, rng, attrs, params)
        add_case(fam, op, "%s_dense_6x5" % tag, make, dyadic(rng, (6, 5), 1.0), rng, attrs, params)
        add_case(fam, op, "%s_kernel_3x3x4x6" % tag, make, dyadic(rng, (3, 3, 4, 6), 1.0), rng, attrs, params)
    # Exact edges inside a channel: values at +-clip, zeros, a channel that is all zero.
    k = dyadic(rng, (4, 3), 1.0)
    k[:, 2] = 0.0
    k[0, 0], k[1, 0], k[2, 1], k[3, 1] = 1.0, -1.0, -0.0, 0.0
    add_case(fam, op, "clip1_edges_4x3", lambda: cls(), k, rng, {}, {"clip_value": 1.0})


def gen_ste_tern(fam, rng):
    op = "larq.quantizers.SteTern"
    cls = lq.quantizers.SteTern
    for thr in (0.05, 0.3):
        for tag, clip in CLIPS[:2] if thr == 0.05 else CLIPS[:1]:
            attrs, params = clip_args(clip)
            attrs["ternary_weight_networks"] = False
            params["threshold_value"] = thr
            make = lambda: cls(threshold_value=thr, clip_value=clip)
            c = 1.0 if clip is None else clip
            edge = arr(GENERIC + pm(around(thr, 2)) + pm(around(c, 1)))
            add_case(fam, op, "thr%g_%s_edge" % (thr, tag), make, edge, rng, attrs, params)
            add_case(fam, op, "thr%g_%s_random_5x7" % (thr, tag), make, normal(rng, (5, 7), 0.3), rng, attrs,
                     params)
    add_case(fam, op, "thr0.05_clip1_special", lambda: cls(), arr(SPECIAL + [F(0), F(0.5)]), rng,
             {"ternary_weight_networks": False}, {"threshold_value": 0.05, "clip_value": 1.0})
    add_case(fam, op, "thr0.05_clipnone_random_5x7", lambda: cls(clip_value=None), normal(rng, (5, 7), 1.0), rng,
             {"ternary_weight_networks": False, "clip_value": None}, {"threshold_value": 0.05})
    # Ternary Weight Networks: the threshold is 0.7 * mean(|x|) over the whole tensor.
    for shape in [(7,), (6, 5), (3, 3, 4, 6)]:
        for tag, clip in CLIPS[:1] + CLIPS[2:]:
            attrs, params = clip_args(clip)
            attrs["ternary_weight_networks"] = True
            params["threshold_value"] = 0.05  # ignored with TWN
            add_case(fam, op, "twn_%s_%s" % (tag, "x".join(map(str, shape))),
                     lambda: cls(ternary_weight_networks=True, clip_value=clip), dyadic(rng, shape, 0.8), rng,
                     attrs, params)
    # TWN with the threshold on one of the elements: 16 values, so that /16 is exact; search
    # a dyadic |x| sum S for which fl(0.7f * S) / 16 is itself dyadic (then x can hold +-D,
    # D +- 2^-12 and keep every partial sum exact).
    u = F(2.0 ** -12)
    for m in range(40000, 120000):
        s_ = F(m) * u
        d = (F(0.7) * s_) / F(16)
        if d % u == 0 and F(0.05) < d < F(1):
            rest = s_ - F(4) * d
            if rest > 0 and (rest / u) % 12 == 0 and rest / 12 < F(7):
                break
    else:
        raise RuntimeError("no dyadic TWN threshold found")
    fill = [rest / F(12)] * 12
    x = np.array([d, -d, d + u, -(d - u)] + [v if i % 2 else -v for i, v in enumerate(fill)], np.float32)
    assert np.sum(np.abs(x)) == s_
    add_case(fam, op, "twn_clip1_threshold_hits_elements", lambda: cls(ternary_weight_networks=True), x, rng,
             {"ternary_weight_networks": True}, {"threshold_value": 0.05, "clip_value": 1.0})


def dorefa_edges(k):
    n = 2 ** k - 1
    pts = [F(0), F(-0.0), F(1), F(-1e-7), F(1.5), F(-2), F(1e30), F(-1e30), DENORM_MIN, -DENORM_MIN]
    pts += around(1.0, 1) + around(0.0, 1)
    for i in range(n + 1):
        pts += [F(i / n)]
        for e in ((2 * i - 1) / (2 * n), (2 * i + 1) / (2 * n)):
            if 0 <= e <= 1:
                pts += around(e, 1)
    return arr(pts)


def gen_dorefa(fam, rng):
    op = "larq.quantizers.DoReFa"
    cls = lq.quantizers.DoReFa
    for k in (1, 2, 4, 8):
        make = lambda: cls(k_bit=k, mode="activations")
        attrs = {"k_bit": k, "mode": "activations"}
        add_case(fam, op, "act_k%d_edge" % k, make, dorefa_edges(k), rng, attrs)
        if k in (2, 4):
            add_case(fam, op, "act_k%d_random_5x7" % k, make, rng.uniform(-0.2, 1.2, (5, 7)).astype(np.float32),
                     rng, attrs)
    add_case(fam, op, "act_k2_special", lambda: cls(k_bit=2), arr(SPECIAL + [F(0.5)]), rng,
             {"k_bit": 2, "mode": "activations"})
    for k in (1, 2, 4):
        make = lambda: cls(k_bit=k, mode="weights")
        attrs = {"k_bit": k, "mode": "weights"}
        add_case(fam, op, "w_k%d_kernel_3x3x4x6" % k, make, normal(rng, (3, 3, 4, 6), 0.5), rng, attrs)
        add_case(fam, op, "w_k%d_dense_8x5" % k, make, normal(rng, (8, 5), 1.5), rng, attrs)
        edge = arr(GENERIC[:-6] + pm([0.1, 0.3, 3.0, 8.0, 8.5, 20.0]))  # |x| > ~8: tanh is exactly 1
        add_case(fam, op, "w_k%d_edge" % k, make, edge, rng, attrs)
    add_case(fam, op, "w_k2_all_zero", lambda: cls(k_bit=2, mode="weights"), np.zeros((2, 3), np.float32), rng,
             {"k_bit": 2, "mode": "weights"})
    add_case(fam, op, "w_k2_infinities", lambda: cls(k_bit=2, mode="weights"),
             arr([PINF, NINF, F(0.2), F(-0.7), F(0)]), rng, {"k_bit": 2, "mode": "weights"})


def gen_noop(fam, rng):
    for p in (1, 8):
        add_case(fam, "larq.quantizers.NoOp", "precision%d" % p, lambda: lq.quantizers.NoOp(precision=p),
                 arr(GENERIC + SPECIAL), rng, {"precision": p})


def gen_tanh_cosh_probe(fam, rng):
    """TF's tanh (Eigen's rational approximation) and cosh (libm coshf), which the swish_sign
    gradient and DoReFa's weight mode use: a test can tell a different libm from a bug."""
    x = arr(pm([0.1, 0.5, 1.0, 1.6521853, 2.994231, 3.3153167, 6.470319, 9.0, 30.0]) +
            list(rng.uniform(-12, 12, 40).astype(np.float32)))
    fam.add("tf.math", "tanh_cosh_probe", {},
            {"x": x, "tanh": tf.math.tanh(tf.constant(x)).numpy(), "cosh": tf.math.cosh(tf.constant(x)).numpy()})


# ----------------------------------------------------------------------------
# FlipRatio
# ----------------------------------------------------------------------------

def flip_ratio_steps(updates):
    """Runs larq.metrics.FlipRatio over `updates` (arrays, or "reset") and records
    (total, count, result) after each step."""
    m = lq.metrics.FlipRatio()
    steps = []
    for u in updates:
        if isinstance(u, str):
            assert u == "reset"
            m.reset_state()
            st = {"reset": True}
        else:
            m.update_state(tf.constant(np.asarray(u, np.float32)))
            st = {"values": np.asarray(u, np.float32)}
        st["total"] = np.array(m.total.numpy(), np.float32)
        st["count"] = np.array(m.count.numpy(), np.float32)
        st["result"] = np.array(m.result().numpy(), np.float32)
        steps.append(st)
    return steps


def gen_flip_ratio(fam, rng):
    op = "larq.metrics.FlipRatio"
    fam.add(op, "docstring_example", {}, {}, flip_ratio_steps([[1, 1], [2, 2], [1, 2]]))
    signs = [np.where(rng.standard_normal((4, 6)) >= 0, 1.0, -1.0).astype(np.float32) for _ in range(5)]
    fam.add(op, "signs_with_reset", {}, {}, flip_ratio_steps(signs[:3] + ["reset"] + signs[3:] + ["reset"]))
    # Fractional values are truncated by the int8 cast: 0.7 -> 0, -0.7 -> 0, 1.9 -> 1, 200 -> -56.
    frac = [
        [0.7, -0.7, 1.9, -1.9, 0.0, 2.5, 126.9, 200.0],
        [0.2, -0.2, 1.1, -1.1, -0.0, 2.9, 126.1, 200.5],
        [1.0, -1.0, 1.0, -2.0, 0.5, 3.0, -127.5, -56.0],
        [0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5],
    ]
    fam.add(op, "fractional_truncation", {}, {}, flip_ratio_steps(frac + ["reset", frac[0], frac[0]]))
    # Magnitude-aware outputs (scaled signs) with the mid-sequence reset.
    mags = [(np.sign(rng.standard_normal((3, 5))) * rng.uniform(0.3, 2.5, (1, 5))).astype(np.float32) for _ in range(4)]
    fam.add(op, "scaled_signs", {}, {}, flip_ratio_steps(mags[:2] + ["reset"] + mags[2:]))


def gen_quantizer_flip_ratio(fam, rng):
    """A quantizer layer with metrics=["flip_ratio"], called several times: its metric."""
    for cls_name, make, scale in [("SteSign", lambda: lq.quantizers.SteSign(metrics=["flip_ratio"]), 1.0),
                                  ("DoReFa", lambda: lq.quantizers.DoReFa(k_bit=2, metrics=["flip_ratio"]), 0.6)]:
        q = make()
        steps = []
        for i in range(4):
            x = (rng.standard_normal((3, 4)) * scale + (0.5 if cls_name == "DoReFa" else 0)).astype(np.float32)
            y = q(tf.constant(x))
            steps.append({"x": x, "y": y.numpy(), "result": np.array(q.flip_ratio.result().numpy(), np.float32)})
        fam.add("larq.quantizers.%s" % cls_name, "flip_ratio_metric_calls", {"metrics": "flip_ratio"}, {}, steps)


# ----------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("-q", action="store_true", help="quiet")
    args = ap.parse_args()
    versions = {"larq": lq.__version__ if hasattr(lq, "__version__") else "0.14",
                "numpy": np.__version__, "tensorflow": tf.__version__}
    try:
        from importlib.metadata import version as pkg_version
        versions["larq"] = pkg_version("larq")
        versions["tf_keras"] = pkg_version("tf_keras")
    except Exception:  # pragma: no cover
        pass

    fam = Family(FILE)
    gens = [gen_ste_sign, gen_approx_sign, gen_swish_sign, gen_ste_heaviside, gen_magnitude_aware_sign,
            gen_ste_tern, gen_dorefa, gen_noop, gen_tanh_cosh_probe, gen_flip_ratio, gen_quantizer_flip_ratio]
    for seed, g in enumerate(gens):
        g(fam, np.random.default_rng(1000 + seed))
    path = fam.write(args.out, versions)
    if not args.q:
        counts = {}
        for c in fam.cases:
            counts[c["op"]] = counts.get(c["op"], 0) + 1
        for k in sorted(counts):
            print("%-40s %3d cases" % (k, counts[k]))
        print("wrote %s (%d bytes); versions %s" % (path, os.path.getsize(path), json.dumps(versions, sort_keys=True)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
