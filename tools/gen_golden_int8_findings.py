#!/usr/bin/env python3
"""Golden vectors for three int8 findings (issue 35), from the peers themselves:

1. torch.fake_quantize_per_channel_affine with int32 zero points beyond 2^24 (int32 quant
   ranges): torch keeps the integer zero point, a float kernel loses it.
2. torch.aminmax (MinMaxObserver's statistic) on batches holding both -0.0 and +0.0: which
   zero it keeps, under each ATEN_CPU_CAPABILITY (default, avx2, avx512), each in its own
   process (the capability is read once per process).
3. onnxruntime's symmetric percentile collector (HistogramCollector.collect_absolute_value)
   on a second batch that grows the histogram: numpy 2's np.arange of float32 scalars is
   float64, so the new edges are doubles; cases are kept where edges computed in float32
   would put a value in another bin.

Writes tests/data/golden/int8_findings.json (format: tools/README.md). Deterministic.

Usage: python tools/gen_golden_int8_findings.py [--out DIR]
"""

import argparse
import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(REPO, "tests", "data", "golden")


def enc(a):
    import numpy as np
    a = np.array(a, order="C")
    if a.dtype == np.float32:
        return {"shape": [int(s) for s in a.shape], "f32": [int(v) for v in a.reshape(-1).view(np.uint32)]}
    if a.dtype.kind in "iub":
        return {"shape": [int(s) for s in a.shape], "i64": [int(v) for v in a.reshape(-1).astype(np.int64)]}
    raise TypeError(a.dtype)


# ---- 2: aminmax under one capability (run in a child process) ---------------------------

def zero_batches():
    import numpy as np
    rng = np.random.default_rng(35)
    batches = [[-0.0, 0.0], [0.0, -0.0], [-0.0, 0.0, 1.0], [1.0, 0.0, -0.0], [0.0] * 7 + [-0.0] + [1.0] * 10,
               [-0.0] * 9 + [0.0] * 9 + [2.0] * 40, [2.0] * 33 + [0.0, -0.0], [-3.0, -0.0, 0.0], [-1.0, 0.0, -0.0]]
    for n in list(range(1, 40)) + [47, 63, 64, 65, 100, 129]:
        for _ in range(3):
            v = rng.choice(np.array([-0.0, 0.0, 1.0, -1.0, 0.5], dtype=np.float32), size=n)
            if rng.integers(2):
                v = -np.abs(v)  # max is a zero
            batches.append([float(t) for t in v])
    return [np.array(b, dtype=np.float32) for b in batches]


def child_aminmax():
    import torch
    torch.set_num_threads(1)
    out = []
    for b in zero_batches():
        lo, hi = torch.aminmax(torch.from_numpy(b))
        out.append([int(lo.numpy().reshape(1).view("uint32")[0]), int(hi.numpy().reshape(1).view("uint32")[0])])
    obs = torch.ao.quantization.MinMaxObserver()
    steps = []
    for b in zero_batches()[:12]:
        obs(torch.from_numpy(b))
        steps.append([int(obs.min_val.numpy().reshape(1).view("uint32")[0]),
                      int(obs.max_val.numpy().reshape(1).view("uint32")[0])])
    print(json.dumps({"capability": torch.backends.cpu.get_cpu_capability(), "aminmax": out, "observer": steps}))


# ---- main ----------------------------------------------------------------------------------

def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--child-aminmax":
        child_aminmax()
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=DEFAULT_OUT)
    args = ap.parse_args()

    import numpy as np
    import torch
    import onnxruntime
    from onnxruntime.quantization.calibrate import HistogramCollector
    torch.set_num_threads(1)
    cases = []

    # 1: per-channel fake quant, int32 zero points
    rng = np.random.default_rng(2124707931)
    qmin, qmax = -(2 ** 31), 2 ** 31 - 1
    zps = [-2124707931, 2124707931, -(2 ** 24) - 3, 2 ** 24 + 5, 123456789, 0, -2 ** 31, 2 ** 31 - 1]
    scales = [0.8808, 0.8808, 0.03, 1e-3, 2.5, 0.1, 0.25, 0.25]
    for name, xs in [("issue_example", np.array([0.4404] * 8, dtype=np.float32)),
                     ("random", rng.standard_normal((250, 8)).astype(np.float32) * 4)]:
        x = torch.from_numpy(xs.reshape(-1, 8).copy())
        s = torch.tensor(scales, dtype=torch.float32)
        z = torch.tensor(zps, dtype=torch.int32)
        y, mask = torch.ops.aten.fake_quantize_per_channel_affine_cachemask(x, s, z, 1, qmin, qmax)
        cases.append({"op": "torch.fake_quantize_per_channel_affine", "name": "wide_zero_point_" + name,
                      "attrs": {"axis": 1, "quant_min": qmin, "quant_max": qmax},
                      "tensors": {"x": enc(x.numpy()), "scale": enc(s.numpy()), "zero_point": enc(z.numpy()),
                                  "y": enc(y.numpy()), "mask": enc(mask.numpy().astype(np.int64))}})

    # 2: aminmax / MinMaxObserver under each capability
    batches = zero_batches()
    for cap in ["default", "avx2", "avx512"]:
        env = dict(os.environ, ATEN_CPU_CAPABILITY=cap, CUDA_VISIBLE_DEVICES="")
        res = json.loads(subprocess.check_output([sys.executable, __file__, "--child-aminmax"], env=env))
        cases.append({"op": "torch.aminmax", "name": "signed_zeros_" + cap,
                      "attrs": {"capability": cap, "reported_capability": res["capability"]},
                      "tensors": {"batch_%d" % i: enc(b) for i, b in enumerate(batches)} if cap == "default" else {},
                      "batches_from": "signed_zeros_default", "results": res["aminmax"], "observer_steps": res["observer"]})

    # 3: onnxruntime symmetric percentile collector, growing edges
    found = 0
    trial = 0
    while found < 12 and trial < 20000:
        trial += 1
        first = (rng.standard_normal(int(rng.integers(50, 400))) * rng.uniform(0.1, 3)).astype(np.float32)
        second = (rng.standard_normal(int(rng.integers(50, 400))) * rng.uniform(2, 8)).astype(np.float32)
        # Plant a value between an edge as numpy computes it (double) and the same edge in
        # float32, so that the two put it in different bins.
        a1 = np.abs(first)
        _, e_first = np.histogram(a1, bins=int(rng.choice([64, 128, 256])))
        e_first = e_first.astype(np.float32)
        width = np.float32(e_first[1] - e_first[0])
        top = np.float32(np.abs(second).max())
        start, stop = np.float32(e_first[-1] + width), np.float32(top + width)
        n = int(np.ceil(np.float32((stop - start) / width)))
        if n < 3:
            continue
        nxt = np.float32(start + width)
        e64 = np.float64(start) + np.arange(n) * (np.float64(nxt) - np.float64(start))
        e32 = np.array([start, nxt] + [np.float32(start + np.float32(i) * np.float32(nxt - start)) for i in range(2, n)],
                       dtype=np.float32)
        k = [i for i in range(2, n - 1) if np.float64(e32[i]) != e64[i]]
        if not k:
            continue
        i = k[len(k) // 2]
        v = e32[i] if np.float64(e32[i]) < e64[i] else np.nextafter(np.float32(e64[i]), np.float32(np.inf))
        if not (min(np.float64(e32[i]), e64[i]) <= v < max(np.float64(e32[i]), e64[i])):
            continue
        second = np.append(second, np.float32(v)).astype(np.float32)
        col = HistogramCollector(method="percentile", symmetric=True, num_bins=len(e_first) - 1,
                                 num_quantized_bins=128, percentile=99.9, scenario="same")
        with open(os.devnull, "w") as devnull:  # the collector prints progress lines
            stdout, sys.stdout = sys.stdout, devnull
            try:
                col.collect({"t": first.copy()})
                old_hist, old_edges = col.histogram_dict["t"][0].copy(), col.histogram_dict["t"][1].copy()
                col.collect({"t": second.copy()})
                rng_lo, rng_hi = col.compute_collection_result()["t"][:2]
            finally:
                sys.stdout = stdout
        hist, edges = col.histogram_dict["t"][0], col.histogram_dict["t"][1]
        if np.abs(second).max() <= old_edges[-1]:
            continue
        # the same step with the edges computed in float32 (what xquant did before)
        width = np.float32(old_edges[1] - old_edges[0])
        start = np.float32(old_edges[-1] + width)
        stop = np.float32(np.float32(np.abs(second).max()) + width)
        n = int(np.ceil(np.float32((stop - start) / width)))
        nxt = np.float32(start + width)
        d = np.float32(nxt - start)
        more = [start, nxt] + [np.float32(start + np.float32(i) * d) for i in range(2, n)]
        e32 = np.hstack((old_edges, np.array(more[:n], dtype=np.float32)))
        h32, _ = np.histogram(np.abs(second), bins=e32)
        h32[: len(old_hist)] += old_hist
        if np.array_equal(h32, hist):
            continue
        found += 1
        cases.append({"op": "ort.percentile_calibrator", "name": "grown_edges_%d" % found,
                      "attrs": {"num_bins": int(col.num_bins), "percentile": 99.9, "symmetric": True,
                                "float32_edges_differ": bool(not np.array_equal(e32, edges)),
                                "float32_counts_differ": bool(not np.array_equal(h32, hist))},
                      "tensors": {"first": enc(first), "second": enc(second), "hist": enc(hist.astype(np.int64)),
                                  "edges": enc(edges.astype(np.float32)),
                                  "range": enc(np.array([rng_lo, rng_hi], dtype=np.float32))}})
    out = {"generator": "tools/gen_golden_int8_findings.py",
           "versions": {"python": sys.version.split()[0], "numpy": np.__version__, "torch": torch.__version__,
                        "onnxruntime": onnxruntime.__version__},
           "cases": cases}
    path = os.path.join(args.out, "int8_findings.json")
    with open(path, "w") as f:
        json.dump(out, f, separators=(",", ":"), sort_keys=True)
        f.write("\n")
    print("wrote", path, len(cases), "cases;", found, "onnxruntime cases from", trial, "trials")


if __name__ == "__main__":
    main()
