#!/usr/bin/env python3
"""Checks an ONNX file with ONNX's checker and runs it in onnxruntime against expected outputs.

    python3 tools/onnx_check.py MODEL.onnx --input NAME=in.npy [--input ...]
        --expected OUT=expected.npy [--expected ...] [--step OUT=SCALE_OR_NPY ...]
        [--min-share 0.9999] [--top1] [--min-top1 SHARE] [--report out.json]
        [--save-optimized PATH] [--paths reference,optimized] [--labels OUT=labels.npy]
        [--exact-integers] [--allow [PATH:]OUT=COUNT[@STEPS] ...] [--save-outputs DIR]
        [--float-rule range|elementwise] [--evaluator onnxruntime|reference]

1. `onnx.checker.check_model(onnx.load(MODEL), full_check=True)` (shape inference included).
2. onnxruntime on CPUExecutionProvider, twice (an input whose .npy type differs from the
   model's is cast where every value stays the same, e.g. float32 indices to int64):
   - reference: GraphOptimizationLevel.ORT_DISABLE_ALL, which runs the graph as written
     (DequantizeLinear -> float op -> QuantizeLinear);
   - optimized: ORT_ENABLE_ALL, where ORT fuses QDQ groups into integer kernels
     (QLinearConv, QGemm, ...). On x86 without VNNI those kernels use VPMADDUBSW for
     uint8 x int8, whose int16 sums saturate (off by tens of steps); the session option
     `session.x64quantprecision = "1"` makes ORT use its exact U8U8 kernels instead, so it
     is set when /proc/cpuinfo lists neither avx512_vnni nor avx_vnni (the report says which).
3. For each --expected output and each path, elementwise: the share of elements with
   |ort - expected| <= step, the largest difference in steps and the first differing
   indices. The step is one quantization step: --step OUT=0.05 (a scalar) or
   --step OUT=steps.npy (per channel along the last axis). Without --step: integer outputs
   must be equal; float outputs by --float-rule:
   - range (the default): within 1e-4 of the output's largest magnitude. A float output
     of a quantized file (a conv or dense whose sums leave as floats) is the same integers
     summed in float in another order than the engine's exact int32 sum times its scale:
     the differences are float rounding, which scales with the magnitude of the output
     (its summands), not with each element; elements near zero, where the sum cancels,
     differ far beyond 1e-5 of themselves even when every integer agrees (measured on a
     3x3x32 conv: 313 of 32,768 elements, the largest difference 3.8e-7 of the range).
     1e-4 of the range stays well under one quantization step of a quantized output;
   - elementwise (the strict rule, the default before issue 34): within 1e-5 relative,
     each element (values below 1/1000 of the array's largest magnitude are compared at
     that magnitude), for a float model compared with the same float program.
   --top1 also reports the share of rows whose argmax along the last axis is the same;
   --labels OUT=labels.npy the accuracy of OUT's argmax (and of the expected values').
   --paths runs only the reference or the optimized path (default both).
   --exact-integers: every integer output without --step is checked in integer steps, not
   by share: it passes when no element differs, or when the elements that differ are at
   most the COUNT its --allow grants (each by at most STEPS, default 1), for every path or
   only for PATH (reference, optimized). Each allowance is a documented exception: the
   report counts the differing elements and their steps either way.
   --save-outputs DIR writes what onnxruntime computed for each --expected output as
   DIR/<path>.<output>.npy (characters other than letters, digits, '.', '-' and '_' as '_'),
   for a caller that scores them itself (an end-point error, say).
   --evaluator reference runs ONNX's reference evaluator (onnx.reference.ReferenceEvaluator,
   the operators' semantics in numpy) instead of onnxruntime, as one path named "evaluator":
   for files onnxruntime cannot run (FLOAT4E2M1 at opset 23, FLOAT8E8M0 scales at opset 24).

Exit status: 0 when the checker passes and every share (and top-1 share, with --min-top1)
is at least the minimum; 1 when the checker fails or a share is below it; 2 for a usage
error (a missing file, an unknown input or output name, a shape that differs).
"""

import argparse
import json
import os
import sys


# onnxruntime's input type names and the numpy types they take.
ORT_TYPES = {
    "tensor(float)": "float32", "tensor(double)": "float64", "tensor(float16)": "float16",
    "tensor(int8)": "int8", "tensor(uint8)": "uint8", "tensor(int16)": "int16", "tensor(uint16)": "uint16",
    "tensor(int32)": "int32", "tensor(uint32)": "uint32", "tensor(int64)": "int64", "tensor(uint64)": "uint64",
    "tensor(bool)": "bool",
}


def parse_pairs(values, what):
    pairs = {}
    for item in values or []:
        name, sep, value = item.partition("=")
        if not sep or not name or not value:
            raise SystemExit(usage_error(f"{what} wants NAME=VALUE, given {item!r}"))
        if name in pairs:
            raise SystemExit(usage_error(f"{what} {name} given twice"))
        pairs[name] = value
    return pairs


def usage_error(message):
    print(f"onnx_check: error: {message}", file=sys.stderr)
    return 2


def cpu_vnni():
    """The VNNI flags /proc/cpuinfo lists (avx512_vnni, avx_vnni); None when it cannot be read."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    return sorted(flags & {"avx512_vnni", "avx_vnni"})
    except OSError:
        pass
    return None


def load_step(np, text):
    try:
        return np.float64(float(text)), text
    except ValueError:
        pass
    if not os.path.isfile(text):
        raise SystemExit(usage_error(f"--step {text!r} is neither a number nor a .npy file"))
    return np.load(text).astype(np.float64), text


def parse_allowances(values):
    """--allow [PATH:]OUT=COUNT[@STEPS]: {(path or None, OUT): (COUNT, STEPS)}."""
    allowed = {}
    for item in values or []:
        key, sep, value = item.partition("=")
        path, colon, out = key.partition(":")
        if not colon or path not in ("reference", "optimized"):
            path, out = None, key
        count, at, steps = value.partition("@")
        try:
            allowance = (int(count), int(steps) if at else 1)
        except ValueError:
            raise SystemExit(usage_error(f"--allow wants [PATH:]OUT=COUNT[@STEPS], given {item!r}"))
        if not out or allowance[0] < 0 or allowance[1] < 1:
            raise SystemExit(usage_error(f"--allow wants [PATH:]OUT=COUNT[@STEPS], given {item!r}"))
        if (path, out) in allowed:
            raise SystemExit(usage_error(f"--allow {key} given twice"))
        allowed[(path, out)] = allowance
    return allowed


# --float-rule: the tolerances of a float output compared without --step (see the docstring).
FLOAT_RANGE_TOLERANCE = 1e-4
FLOAT_ELEMENTWISE_TOLERANCE = 1e-5


def compare(np, got, want, step, max_listed=5, float_rule="range"):
    """Elementwise comparison of `got` with `want` (same shape): a dict for the report."""
    g = got.astype(np.float64)
    w = want.astype(np.float64)
    diff = np.abs(g - w)
    both_nan = np.isnan(g) & np.isnan(w)
    diff = np.where(both_nan, 0.0, diff)
    diff = np.where(np.isnan(diff), np.inf, diff)
    integer = np.issubdtype(got.dtype, np.integer) or got.dtype == np.bool_
    if step is not None:
        s = np.asarray(step, dtype=np.float64)
        if s.ndim == 1 and w.ndim >= 1 and s.shape[0] != w.shape[-1]:
            raise SystemExit(usage_error(f"a per-channel step of {s.shape[0]} values for an output whose "
                                         f"last axis has {w.shape[-1]}"))
        if s.ndim > 1:
            raise SystemExit(usage_error("a step is a scalar or a 1-D array along the last axis"))
        tol = np.broadcast_to(s, w.shape)
        rule = "step"
    elif integer:
        tol = np.zeros(w.shape)
        rule = "exact"
    elif float_rule == "range":
        finite = np.abs(w[np.isfinite(w)])
        largest = finite.max() if finite.size else 0.0
        tol = np.full(w.shape, FLOAT_RANGE_TOLERANCE * largest)
        rule = f"range {FLOAT_RANGE_TOLERANCE:g}"
    else:
        finite = np.abs(w[np.isfinite(w)])
        floor = 1e-3 * finite.max() if finite.size else 0.0
        tol = FLOAT_ELEMENTWISE_TOLERANCE * np.maximum(np.abs(w), floor)
        rule = f"rel {FLOAT_ELEMENTWISE_TOLERANCE:g}"
    within = diff <= tol
    n = int(w.size)
    n_within = int(within.sum())
    safe_tol = np.where(tol > 0, tol, np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(diff == 0, 0.0, diff / safe_tol)
    ratio = np.where(np.isnan(ratio), np.inf, ratio)  # a difference where the step is 0
    bad = np.argwhere(~within)
    first = []
    for idx in bad[:max_listed]:
        t = tuple(int(i) for i in idx)
        first.append({"index": list(t), "ort": g[t].item(), "expected": w[t].item()})
    return {
        "rule": rule,
        "elements": n,
        "within": n_within,
        "share": (n_within / n) if n else 1.0,
        "max_abs_diff": float(diff.max()) if n else 0.0,
        "max_diff_in_steps": float(ratio.max()) if n else 0.0,
        "first_differing": first,
    }


class EvaluatorSession:
    """onnx.reference.ReferenceEvaluator behind the part of onnxruntime's session API used here."""

    class _Info:
        def __init__(self, name, type_name):
            self.name, self.type = name, type_name

    def __init__(self, np, onnx, evaluator, path):
        model = onnx.load(path)
        self._evaluator = evaluator(model)
        names = {v: k for k, v in onnx.TensorProto.DataType.items()}
        ort_name = {"FLOAT": "float", "DOUBLE": "double", "INT64": "int64", "INT32": "int32", "INT8": "int8",
                    "UINT8": "uint8", "BOOL": "bool"}
        init = {t.name for t in model.graph.initializer}
        self._inputs = [self._Info(i.name, "tensor(" + ort_name.get(names[i.type.tensor_type.elem_type], "float") + ")")
                        for i in model.graph.input if i.name not in init]
        self._outputs = [self._Info(o.name, "") for o in model.graph.output]

    def get_inputs(self):
        return self._inputs

    def get_outputs(self):
        return self._outputs

    def run(self, names, feeds):
        return self._evaluator.run(names, feeds)


def top1_share(np, got, want):
    if got.ndim < 1 or got.shape[-1] == 0:
        return None
    a = np.argmax(got.reshape(-1, got.shape[-1]), axis=1)
    b = np.argmax(want.reshape(-1, want.shape[-1]), axis=1)
    return float((a == b).mean()) if a.size else 1.0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("model", help="the .onnx file")
    ap.add_argument("--input", action="append", metavar="NAME=FILE.npy", help="a graph input (repeat for each)")
    ap.add_argument("--expected", action="append", metavar="OUT=FILE.npy",
                    help="an output and the values it should have (repeat for each)")
    ap.add_argument("--step", action="append", metavar="OUT=SCALE|FILE.npy",
                    help="one quantization step of OUT: a scalar, or per channel along the last axis")
    ap.add_argument("--min-share", type=float, default=0.9999,
                    help="the least share of elements within one step, per output and path (default 0.9999)")
    ap.add_argument("--top1", action="store_true", help="also report the share of identical argmax (last axis)")
    ap.add_argument("--min-top1", type=float, default=None, help="fail when a top-1 share is below this")
    ap.add_argument("--report", metavar="FILE.json", help="write the results as JSON")
    ap.add_argument("--save-optimized", metavar="PATH", help="save ORT's optimized graph (what it runs)")
    ap.add_argument("--paths", default="reference,optimized",
                    help="which onnxruntime paths to run: reference, optimized or both (default both)")
    ap.add_argument("--labels", action="append", metavar="OUT=FILE.npy",
                    help="class indices: also report the accuracy of OUT's argmax (last axis) on each path")
    ap.add_argument("--exact-integers", action="store_true",
                    help="integer outputs without --step: every element equal, but for the --allow exceptions")
    ap.add_argument("--save-outputs", metavar="DIR", help="write onnxruntime's outputs as DIR/<path>.<output>.npy")
    ap.add_argument("--allow", action="append", metavar="[PATH:]OUT=COUNT[@STEPS]",
                    help="with --exact-integers: up to COUNT elements of OUT may differ, each by <= STEPS (default 1)")
    ap.add_argument("--float-rule", choices=("range", "elementwise"), default="range",
                    help="float outputs without --step: within 1e-4 of the output's largest magnitude (range, "
                         "the default: float rounding of the same integers) or within 1e-5 of each element "
                         "(elementwise, the strict rule)")
    ap.add_argument("--evaluator", choices=("onnxruntime", "reference"), default="onnxruntime",
                    help="run the model in onnxruntime (its reference and optimized paths) or in ONNX's "
                         "reference evaluator (one path, \"evaluator\")")
    args = ap.parse_args(argv)
    chosen = [p.strip() for p in args.paths.split(",") if p.strip()]
    if not chosen or any(p not in ("reference", "optimized") for p in chosen):
        return usage_error(f"--paths {args.paths}: expected reference, optimized or both, comma-separated")
    labels = parse_pairs(args.labels, "--labels")
    allowances = parse_allowances(args.allow)
    if allowances and not args.exact_integers:
        return usage_error("--allow needs --exact-integers")

    inputs = parse_pairs(args.input, "--input")
    expected = parse_pairs(args.expected, "--expected")
    steps = parse_pairs(args.step, "--step")
    if not expected:
        return usage_error("no --expected output to compare")
    for name in steps:
        if name not in expected:
            return usage_error(f"--step {name}: not an --expected output")
    for name in labels:
        if name not in expected:
            return usage_error(f"--labels {name}: not an --expected output")
    for _, name in allowances:
        if name not in expected or name in steps:
            return usage_error(f"--allow {name}: not an --expected output compared in integer steps (no --step)")
    for path in [args.model] + list(inputs.values()) + list(expected.values()) + list(labels.values()):
        if not os.path.isfile(path):
            return usage_error(f"{path}: no such file")

    try:
        import numpy as np
        import onnx
        import onnxruntime as ort
    except ImportError as e:
        return usage_error(f"{e} (scripts/install_onnx_deps.sh makes a venv with onnx, onnxruntime and numpy)")

    vnni = cpu_vnni()
    report = {
        "model": args.model,
        "versions": {"onnx": onnx.__version__, "onnxruntime": ort.__version__, "numpy": np.__version__,
                     "python": sys.version.split()[0]},
        "cpu_vnni": vnni,
        "min_share": args.min_share,
        "exact_integers": args.exact_integers,
        "float_rule": args.float_rule,
        "checker": None,
        "paths": {},
        "passed": False,
    }

    def finish(status):
        report["passed"] = status == 0
        if args.report:
            with open(args.report, "w", encoding="utf-8") as f:
                json.dump(report, f, indent=1)
        return status

    try:
        onnx.checker.check_model(onnx.load(args.model), full_check=True)
        report["checker"] = "passed"
        print(f"onnx_check: {args.model}: onnx {onnx.__version__} checker (full_check) passed")
    except Exception as e:  # onnx.checker.ValidationError, shape inference errors, a bad file
        report["checker"] = f"{type(e).__name__}: {e}"
        print(f"onnx_check: {args.model}: onnx checker FAILED: {type(e).__name__}: {e}")
        return finish(1)

    feeds = {name: np.load(path) for name, path in inputs.items()}
    wants = {name: np.load(path) for name, path in expected.items()}
    step_values = {name: load_step(np, text) for name, text in steps.items()}
    label_values = {name: np.load(path).reshape(-1) for name, path in labels.items()}

    precision_fix = vnni is not None and not vnni
    paths = [("reference", ort.GraphOptimizationLevel.ORT_DISABLE_ALL, {}),
             ("optimized", ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
              {"session.x64quantprecision": "1"} if precision_fix else {})]
    paths = [p for p in paths if p[0] in chosen]
    if args.evaluator == "reference":
        paths = [("evaluator", None, {})]
    print(f"onnx_check: onnxruntime {ort.__version__}, CPU VNNI: "
          f"{', '.join(vnni) if vnni else ('none' if vnni is not None else 'unknown (no /proc/cpuinfo)')}"
          f"{'; optimized path with session.x64quantprecision=1' if precision_fix else ''}")

    failed = False
    rows = []
    for path_name, level, config in paths:
        if path_name == "evaluator":
            try:
                from onnx.reference import ReferenceEvaluator
                session = EvaluatorSession(np, onnx, ReferenceEvaluator, args.model)
            except Exception as e:
                print(f"onnx_check: the reference evaluator cannot load the model: {e}")
                report["paths"][path_name] = {"error": str(e)}
                return finish(1)
        else:
            so = ort.SessionOptions()
            so.graph_optimization_level = level
            for key, value in config.items():
                so.add_session_config_entry(key, value)
            if path_name == "optimized" and args.save_optimized:
                so.optimized_model_filepath = args.save_optimized
            try:
                session = ort.InferenceSession(args.model, so, providers=["CPUExecutionProvider"])
            except Exception as e:
                print(f"onnx_check: onnxruntime cannot load the model ({path_name}): {e}")
                report["paths"][path_name] = {"error": str(e)}
                return finish(1)
        declared = {i.name: i for i in session.get_inputs()}
        for name in feeds:
            if name not in declared:
                return finish(usage_error(f"--input {name}: the model's inputs are {sorted(declared)}"))
        missing = [n for n in declared if n not in feeds]
        if missing:
            return finish(usage_error(f"no --input for {missing}"))
        for name, arr in list(feeds.items()):
            # xquant's npy writer stores float32: cast to the input's type where that is exact
            # (int64 indices written as floats), refuse where it would change a value.
            want_type = ORT_TYPES.get(declared[name].type)
            if want_type is None or arr.dtype == want_type:
                continue
            cast = arr.astype(want_type)
            if not np.array_equal(cast.astype(arr.dtype), arr, equal_nan=arr.dtype.kind == "f"):
                return finish(usage_error(f"--input {name}: {arr.dtype} values that {np.dtype(want_type).name} "
                                          f"({declared[name].type}) cannot hold exactly"))
            feeds[name] = cast
            report.setdefault("input_casts", {})[name] = f"{arr.dtype} -> {np.dtype(want_type).name}"
        outputs = [o.name for o in session.get_outputs()]
        for name in wants:
            if name not in outputs:
                return finish(usage_error(f"--expected {name}: the model's outputs are {outputs}"))
        names = list(wants)
        try:
            got = dict(zip(names, session.run(names, feeds)))
        except Exception as e:
            print(f"onnx_check: onnxruntime run failed ({path_name}): {e}")
            report["paths"][path_name] = {"error": str(e)}
            return finish(1)
        results = {}
        if args.save_outputs:
            os.makedirs(args.save_outputs, exist_ok=True)
            for name in names:
                safe = "".join(c if c.isalnum() or c in ".-_" else "_" for c in name)
                np.save(os.path.join(args.save_outputs, f"{path_name}.{safe}.npy"), got[name])
        for name in names:
            g, w = got[name], wants[name]
            if g.shape != w.shape:
                return finish(usage_error(f"{name}: ORT's output has shape {g.shape}, the expected {w.shape}"))
            step = step_values.get(name, (None, None))[0]
            r = compare(np, g, w, step, float_rule=args.float_rule)
            r["dtype"] = str(g.dtype)
            r["shape"] = list(g.shape)
            r["step"] = step_values[name][1] if name in step_values else None
            if args.top1:
                r["top1_share"] = top1_share(np, g, w)
            if name in label_values:
                predicted = np.argmax(g.reshape(-1, g.shape[-1]), axis=1)
                if predicted.size != label_values[name].size:
                    return finish(usage_error(f"--labels {name}: {label_values[name].size} labels for "
                                              f"{predicted.size} rows"))
                r["accuracy"] = float((predicted == label_values[name].astype(np.int64)).mean())
                r["expected_accuracy"] = float(
                    (np.argmax(w.reshape(-1, w.shape[-1]), axis=1) == label_values[name].astype(np.int64)).mean())
            if args.exact_integers and r["rule"] == "exact":
                # Integer steps: every element equal but for a documented, counted exception.
                count, max_steps = allowances.get((path_name, name), allowances.get((None, name), (0, 0)))
                d = np.abs(g.astype(np.int64) - w.astype(np.int64)).reshape(-1)
                steps_hist = {int(k): int(v) for k, v in zip(*np.unique(d[d > 0], return_counts=True))}
                r["rule"] = "integers"
                r["differing"] = int((d > 0).sum())
                r["steps"] = steps_hist
                r["allowed"] = {"count": count, "steps": max_steps}
                r["max_diff_in_steps"] = float(d.max()) if d.size else 0.0
                r["passed"] = r["differing"] <= count and (r["differing"] == 0 or int(d.max()) <= max_steps)
            else:
                r["passed"] = r["share"] >= args.min_share and not (
                    args.min_top1 is not None and r.get("top1_share") is not None and r["top1_share"] < args.min_top1)
            failed = failed or not r["passed"]
            results[name] = r
            rows.append((path_name, name, r))
        report["paths"][path_name] = {"session_config": config, "graph_optimization_level": str(level),
                                      "outputs": results}

    header = ("path", "output", "dtype", "shape", "rule", "within", "share", "max diff (steps)", "top-1", "accuracy",
              "")
    table = [header]
    for path_name, name, r in rows:
        table.append((path_name, name, r["dtype"], "x".join(map(str, r["shape"])) or "scalar",
                      r["rule"] + (f" {r['step']}" if r["step"] is not None else "") +
                      (f" (allow {r['allowed']['count']}@{r['allowed']['steps']}: differ {r['differing']}"
                       f"{' ' + str(r['steps']) if r['steps'] else ''})" if r["rule"] == "integers" else ""),
                      f"{r['within']}/{r['elements']}", f"{r['share']:.6f}",
                      f"{r['max_diff_in_steps']:.3g} ({r['max_abs_diff']:.3g})",
                      "-" if r.get("top1_share") is None else f"{r['top1_share']:.4f}",
                      "-" if r.get("accuracy") is None else f"{r['accuracy']:.4f} (expected {r['expected_accuracy']:.4f})",
                      "ok" if r["passed"] else "FAIL"))
    widths = [max(len(str(row[i])) for row in table) for i in range(len(header))]
    for row in table:
        print("  ".join(str(c).ljust(widths[i]) for i, c in enumerate(row)).rstrip())
    for path_name, name, r in rows:
        for d in r["first_differing"]:
            print(f"  {path_name} {name}{d['index']}: ort {d['ort']!r}, expected {d['expected']!r}")
    # One machine-readable line per path and output with labels or top-1 (the examples read it).
    for path_name, name, r in rows:
        if r.get("accuracy") is not None or r.get("top1_share") is not None:
            print(f"onnx_check summary: path={path_name} output={name}"
                  f" accuracy={r.get('accuracy', -1):.6f} top1={r.get('top1_share', -1):.6f}")
    print(f"onnx_check: {'FAILED' if failed else 'passed'} (min share {args.min_share}"
          f"{f', min top-1 {args.min_top1}' if args.min_top1 is not None else ''})")
    return finish(1 if failed else 0)


if __name__ == "__main__":
    sys.exit(main())
