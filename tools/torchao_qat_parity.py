#!/usr/bin/env python3
"""torchao's own QAT parity on given weights: prepared (fake-quantized) vs converted output.

For each linear layer it is given, and for the model those layers chain into, the script
runs torchao's QAT flow exactly as its documentation writes it,

    quantize_(model, QATConfig(base_config, step="prepare"))   # nn.Linear -> FakeQuantizedLinear
    y_prepared = model(x)
    quantize_(model, QATConfig(base_config, step="convert"))   # -> nn.Linear with a quantized weight
    y_converted = model(x)

and prints, per layer and for the model output, SQNR(prepared vs converted), SQNR of each
against the float model (before prepare, same dtype) and the share of outputs that are
bit-identical between prepared and converted. SQNR = 10 log10(sum ref^2 / sum (ref - x)^2),
inf when identical. All quantization is torchao's own code; the script only builds the
models, feeds them and measures.

Base configs (torchao 0.18 names):

  8da4w   Int8DynamicActivationIntxWeightConfig(weight_dtype=torch.int4,
                                                weight_granularity=PerGroup(32))
  int4wo  Int4WeightOnlyConfig(group_size=128), run in bfloat16 (its Int4Tensor takes bf16
          activations; QAT prepare accepts only its 'plain' and 'preshuffled' packing
          formats). Its convert needs the MSLK kernels (CUDA): where it fails, the error is
          printed and 'intxwo' runs in its place.
  intxwo  IntxWeightOnlyConfig(weight_dtype=torch.int4, granularity=PerGroup(128))
  8da4w-opaque  (opt-in) prepare as 8da4w, convert with intx_packing_format=
          "opaque_torchao_auto", torchao's packed CPU-kernel format. 8da4w's own convert
          ('unpacked_to_int8') computes its linear as dequantize + F.linear; the opaque
          formats need torchao's kernel library, which the x86-64 PyPI wheel does not ship.

Inputs (one of):

  --demo        a deterministic toy MLP: fc1 128->512, GELU, fc2 512->128, weights and
                biases N(0, 0.05), 64 tokens of N(0, 1) input.
  DIR           a directory of .npy files, or an .npz, named like tools/export_weights.py's:
                  <layer>.kernel or <layer>.weight   2-D weight; --layout keras (in, out),
                                                     the default, or torch (out, in)
                  <layer>.bias                       optional, (out,)
                  <layer>.input                      optional activations (tokens, in) or
                                                     (..., in); also .act / .activations
                Layers are taken in natural name order (npz: file order), or as --order
                lists them. A layer with no
                activations gets the float model's activations when it chains from the
                previous layer (out == in) and that one has them, else N(0, 1) tokens from
                --seed. When all layers chain, the model output row runs them as one
                nn.Sequential with --act between them.

    /root/.cache/xquant-torchao-venv/bin/python tools/torchao_qat_parity.py --demo
    /root/.cache/xquant-torchao-venv/bin/python tools/torchao_qat_parity.py weights_dir \
        --layout keras --configs 8da4w,int4wo --json out.json

Install (CPU; PyPI's torch wheel brings CUDA libraries, which are not needed to run here):

    python3.11 -m venv /root/.cache/xquant-torchao-venv
    /root/.cache/xquant-torchao-venv/bin/pip install torch==2.15.0 torchao==0.18.0 numpy==2.4.6

Deterministic: fixed seeds, one CPU thread unless --threads says otherwise.
"""
import argparse
import copy
import json
import math
import os
import platform
import re
import sys
import traceback

import numpy as np

try:
    import torch
    import torchao
    from torchao.quantization import (
        Int4WeightOnlyConfig,
        Int8DynamicActivationIntxWeightConfig,
        IntxWeightOnlyConfig,
        PerGroup,
        quantize_,
    )
    from torchao.quantization.qat import QATConfig
except ImportError as e:  # pragma: no cover - environment message
    sys.exit(f"torchao_qat_parity.py needs torch and torchao ({e}); see the docstring to install")


WEIGHT_SUFFIXES = ("kernel", "weight")
BIAS_SUFFIXES = ("bias",)
INPUT_SUFFIXES = ("input", "act", "activations")


# ----------------------------------------------------------------------------- configs
def config_8da4w(args):
    return Int8DynamicActivationIntxWeightConfig(
        weight_dtype=torch.int4, weight_granularity=PerGroup(args.group_8da4w)
    )


def config_int4wo(args):
    return Int4WeightOnlyConfig(group_size=args.group_int4)


def config_intxwo(args):
    return IntxWeightOnlyConfig(weight_dtype=torch.int4, granularity=PerGroup(args.group_int4))


def config_8da4w_opaque(args):
    """(prepare, convert): prepare as 8da4w (QAT prepare accepts only 'unpacked_to_int8'),
    convert straight to torchao's packed CPU-kernel format 'opaque_torchao_auto'."""
    return (config_8da4w(args), Int8DynamicActivationIntxWeightConfig(
        weight_dtype=torch.int4, weight_granularity=PerGroup(args.group_8da4w),
        intx_packing_format="opaque_torchao_auto"))


# name -> (factory, dtype or None for --dtype, fallback config name if it fails)
CONFIGS = {
    "8da4w": (config_8da4w, None, None),
    "int4wo": (config_int4wo, torch.bfloat16, "intxwo"),
    "intxwo": (config_intxwo, None, None),
    "8da4w-opaque": (config_8da4w_opaque, None, None),
}


# ----------------------------------------------------------------------------- inputs
def natural_key(s):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", s)]


def split_name(key):
    """'block.fc1.kernel' -> ('block.fc1', 'kernel'); None when the suffix is unknown."""
    if "." not in key:
        return None
    layer, suffix = key.rsplit(".", 1)
    if suffix in WEIGHT_SUFFIXES + BIAS_SUFFIXES + INPUT_SUFFIXES:
        return layer, suffix
    return None


def load_arrays(path):
    arrays = {}
    if os.path.isdir(path):
        names = sorted((f for f in os.listdir(path) if f.endswith(".npy")), key=natural_key)
        for f in names:
            arrays[f[: -len(".npy")]] = np.load(os.path.join(path, f), allow_pickle=False)
    elif path.endswith(".npz"):
        with np.load(path, allow_pickle=False) as z:
            for k in z.files:
                arrays[k[: -len(".npy")] if k.endswith(".npy") else k] = z[k]
    else:
        sys.exit(f"{path}: expected a directory of .npy files or an .npz")
    return arrays


def layers_from_arrays(arrays, layout, only):
    """[(name, weight (out, in) float32, bias or None, input or None)], and notes."""
    layers, notes, order = {}, [], []
    for key, a in arrays.items():
        parsed = split_name(key)
        if parsed is None:
            notes.append(f"ignored {key} (not <layer>.{{kernel,weight,bias,input}})")
            continue
        layer, suffix = parsed
        if only and not re.search(only, layer):
            continue
        if layer not in layers:
            layers[layer] = {}
            order.append(layer)
        kind = ("weight" if suffix in WEIGHT_SUFFIXES else
                "bias" if suffix in BIAS_SUFFIXES else "input")
        layers[layer][kind] = a
    out = []
    for layer in order:
        d = layers[layer]
        if "weight" not in d:
            notes.append(f"ignored {layer}: no .kernel/.weight")
            continue
        w = np.asarray(d["weight"])
        if w.ndim != 2:
            notes.append(f"ignored {layer}: weight has shape {w.shape}, not 2-D")
            continue
        w = w.T if layout == "keras" else w
        w = np.ascontiguousarray(w, dtype=np.float32)
        b = d.get("bias")
        if b is not None:
            b = np.asarray(b, dtype=np.float32).reshape(-1)
            if b.shape[0] != w.shape[0]:
                sys.exit(f"{layer}: bias has {b.shape[0]} entries, weight has {w.shape[0]} "
                         f"outputs (wrong --layout?)")
        x = d.get("input")
        if x is not None:
            x = np.asarray(x, dtype=np.float32)
            if x.shape[-1] != w.shape[1]:
                sys.exit(f"{layer}: input's last dimension {x.shape[-1]} != in_features "
                         f"{w.shape[1]} (wrong --layout?)")
            x = x.reshape(-1, w.shape[1])
        out.append((layer, w, b, x))
    return out, notes


def demo_layers(seed):
    rng = np.random.default_rng(seed)
    w1 = rng.normal(0.0, 0.05, (512, 128)).astype(np.float32)  # torch layout (out, in)
    b1 = rng.normal(0.0, 0.05, (512,)).astype(np.float32)
    w2 = rng.normal(0.0, 0.05, (128, 512)).astype(np.float32)
    b2 = rng.normal(0.0, 0.05, (128,)).astype(np.float32)
    x = rng.normal(0.0, 1.0, (64, 128)).astype(np.float32)
    return [("fc1", w1, b1, x), ("fc2", w2, b2, None)]


def activation_module(name):
    return {"gelu": torch.nn.GELU(), "relu": torch.nn.ReLU(), "none": torch.nn.Identity()}[name]


def fill_inputs(layers, args):
    """Give every layer an input: its own, the float model's activations, or seeded N(0, 1)."""
    out, sources = [], []
    prev = None  # (float32 output after the activation, out_features)
    for i, (name, w, b, x) in enumerate(layers):
        if x is not None:
            src = "given"
        elif prev is not None and prev[1] == w.shape[1]:
            x, src = prev[0], "float activations of the previous layer"
        else:
            g = torch.Generator().manual_seed(args.seed + 1000 * (i + 1))
            x = torch.randn(args.tokens, w.shape[1], generator=g).numpy()
            src = f"N(0,1), {args.tokens} tokens, seed {args.seed + 1000 * (i + 1)}"
        with torch.no_grad():
            y = torch.nn.functional.linear(
                torch.from_numpy(x), torch.from_numpy(w),
                None if b is None else torch.from_numpy(b))
            y = activation_module(args.act)(y)
        prev = (y.numpy(), w.shape[0])
        out.append((name, w, b, x))
        sources.append(src)
    return out, sources


def chains(layers):
    return len(layers) > 1 and all(
        layers[i][1].shape[0] == layers[i + 1][1].shape[1] for i in range(len(layers) - 1))


# ----------------------------------------------------------------------------- measuring
def make_linear(w, b, dtype):
    lin = torch.nn.Linear(w.shape[1], w.shape[0], bias=b is not None)
    with torch.no_grad():
        lin.weight.copy_(torch.from_numpy(w))
        if b is not None:
            lin.bias.copy_(torch.from_numpy(b))
    return lin.to(dtype)


def sqnr_db(ref, x):
    ref = ref.detach().double().cpu()
    x = x.detach().double().cpu()
    noise = (ref - x).pow(2).sum().item()
    signal = ref.pow(2).sum().item()
    if noise == 0.0:
        return math.inf
    if signal == 0.0:
        return -math.inf
    return 10.0 * math.log10(signal / noise)


def run_one(model, x, base_config, record_modules):
    """Prepare, run, convert, run. Returns a result dict; 'error' set where a step failed.
    base_config is one config, or a (prepare, convert) pair."""
    prepare_config, convert_config = (
        base_config if isinstance(base_config, tuple) else (base_config, base_config))
    r = {"stage": "float"}
    with torch.no_grad():
        y_float = model(x)
    try:
        r["stage"] = "prepare"
        quantize_(model, QATConfig(prepare_config, step="prepare"))
        if record_modules is not None:
            record_modules["prepared"] = repr(model)
        with torch.no_grad():
            y_prep = model(x)
        r["sqnr_float_vs_prepared"] = sqnr_db(y_float, y_prep)
        r["stage"] = "convert"
        quantize_(model, QATConfig(convert_config, step="convert"))
        if record_modules is not None:
            record_modules["converted"] = repr(model)
            record_modules["weight_type"] = ", ".join(
                sorted({type(m.weight).__name__ for m in model.modules()
                        if isinstance(m, torch.nn.Linear)}))
        with torch.no_grad():
            y_conv = model(x)
        r["sqnr_float_vs_converted"] = sqnr_db(y_float, y_conv)
        r["sqnr_prepared_vs_converted"] = sqnr_db(y_prep, y_conv)
        r["bit_identical_share"] = (y_prep == y_conv).double().mean().item()
        r["max_abs_diff"] = (y_prep.double() - y_conv.double()).abs().max().item()
        r["stage"] = "done"
    except Exception as e:  # report, do not hide: the table shows the step that failed
        r["error"] = f"{type(e).__name__}: {e}".strip()
        r["traceback"] = traceback.format_exc()
    return r


def measure(config_name, base_config, dtype, layers, args, record):
    device = torch.device(args.device)
    rows = []
    for i, (name, w, b, x) in enumerate(layers):
        torch.manual_seed(args.seed)
        model = torch.nn.Sequential(make_linear(w, b, dtype)).to(device)
        xt = torch.from_numpy(x).to(dtype).to(device)
        r = run_one(model, xt, base_config, record if i == 0 else None)
        r.update(config=config_name, layer=name, shape=f"{w.shape[1]}->{w.shape[0]}",
                 tokens=x.shape[0], dtype=str(dtype).replace("torch.", ""))
        rows.append(r)
    if chains(layers):
        mods = []
        for i, (name, w, b, _) in enumerate(layers):
            if i:
                mods.append(activation_module(args.act))
            mods.append(make_linear(w, b, dtype))
        torch.manual_seed(args.seed)
        model = torch.nn.Sequential(*mods).to(device)
        x = layers[0][3]
        xt = torch.from_numpy(x).to(dtype).to(device)
        r = run_one(model, xt, base_config, None)
        shape = "->".join([str(layers[0][1].shape[1])] + [str(l[1].shape[0]) for l in layers])
        r.update(config=config_name, layer=f"model output ({args.act})", shape=shape,
                 tokens=x.shape[0], dtype=str(dtype).replace("torch.", ""))
        rows.append(r)
    return rows


# ----------------------------------------------------------------------------- printing
def fmt_db(v):
    if v is None:
        return "-"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return f"{v:.2f}"


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            text = f.read()
    except OSError:
        return "?"
    model = re.search(r"model name\s*:\s*(.*)", text)
    flags = sorted(set(re.findall(r"\b(avx512[a-z_0-9]*)\b", text)))
    return f"{model.group(1) if model else '?'}; {' '.join(flags) or 'no avx512'}"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("weights", nargs="?", help="directory of .npy files, or an .npz")
    p.add_argument("--demo", action="store_true", help="use a generated toy 128->512->128 MLP")
    p.add_argument("--layout", choices=("keras", "torch"), default="keras",
                   help="weight layout in the files: keras (in, out) or torch (out, in)")
    p.add_argument("--configs", default="8da4w,int4wo",
                   help=f"comma-separated, from {','.join(CONFIGS)} (default 8da4w,int4wo)")
    p.add_argument("--group-8da4w", type=int, default=32, help="8da4w weight group (32)")
    p.add_argument("--group-int4", type=int, default=128, help="int4wo/intxwo group (128)")
    p.add_argument("--dtype", choices=("float32", "bfloat16"), default="float32",
                   help="model dtype for 8da4w and intxwo (int4wo always runs in bfloat16)")
    p.add_argument("--act", choices=("gelu", "relu", "none"), default="gelu",
                   help="activation between chained layers (default gelu)")
    p.add_argument("--tokens", type=int, default=64, help="random tokens where none are given")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--only", help="regular expression: keep only the layers it matches")
    p.add_argument("--order", help="comma-separated layer names: run these, in this order")
    p.add_argument("--device", default="cpu", help="torch device (default cpu)")
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    p.add_argument("--json", help="also write the results here")
    p.add_argument("--tracebacks", action="store_true", help="print full tracebacks of errors")
    args = p.parse_args()
    if args.demo == bool(args.weights):
        p.error("give either --demo or a weights directory/.npz")

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    base_dtype = getattr(torch, args.dtype)

    print("# torchao QAT parity: prepared (fake-quantized) vs converted\n")
    print(f"- torch {torch.__version__}, torchao {torchao.__version__}, numpy {np.__version__}, "
          f"Python {platform.python_version()}, {platform.machine()}")
    print(f"- device {args.device}; torch CPU capability "
          f"{torch.backends.cpu.get_cpu_capability()}; threads {torch.get_num_threads()}")
    print(f"- CPU: {cpu_flags()}")

    if args.demo:
        layers, notes = demo_layers(args.seed), []
        print(f"- input: --demo (fc1 128->512, {args.act}, fc2 512->128; weights, biases "
              f"N(0, 0.05); 64 tokens N(0, 1); seed {args.seed})")
    else:
        layers, notes = layers_from_arrays(load_arrays(args.weights), args.layout, args.only)
        if args.order:
            by_name = {l[0]: l for l in layers}
            names = [n.strip() for n in args.order.split(",") if n.strip()]
            missing = [n for n in names if n not in by_name]
            if missing:
                sys.exit(f"--order names layers not found: {', '.join(missing)}")
            layers = [by_name[n] for n in names]
        print(f"- input: {args.weights} (layout {args.layout}); seed {args.seed}")
        if not layers:
            for n in notes:
                print(f"  - {n}")
            sys.exit("no 2-D linear weights found")
    layers, sources = fill_inputs(layers, args)
    for (name, w, b, x), src in zip(layers, sources):
        print(f"  - {name}: {w.shape[1]}->{w.shape[0]}, bias {'yes' if b is not None else 'no'}, "
              f"input {x.shape[0]} tokens ({src})")
    for n in notes:
        print(f"  - {n}")
    if not chains(layers):
        print("  - the layers do not chain (out != next in) or there is one: no model-output row")

    wanted = [c.strip() for c in args.configs.split(",") if c.strip()]
    for c in wanted:
        if c not in CONFIGS:
            p.error(f"unknown config {c}; choose from {', '.join(CONFIGS)}")

    all_rows, config_notes, done = [], [], set()
    queue = list(wanted)
    while queue:
        name = queue.pop(0)
        if name in done:
            continue
        done.add(name)
        factory, dtype, fallback = CONFIGS[name]
        dtype = dtype or base_dtype
        base_config = factory(args)
        record = {}
        rows = measure(name, base_config, dtype, layers, args, record)
        all_rows.extend(rows)
        print(f"\n## {name} ({str(dtype).replace('torch.', '')})\n")
        if isinstance(base_config, tuple):
            print(f"prepare base config: {base_config[0]!r}\n"
                  f"convert base config: {base_config[1]!r}")
        else:
            print(f"base config: {base_config!r}")
        if "prepared" in record:
            print(f"\nafter prepare (first layer):\n{record['prepared']}")
        if "converted" in record:
            print(f"\nafter convert (first layer; weight type {record['weight_type']}):\n"
                  f"{record['converted']}")
        errors = {}
        for r in rows:
            if "error" in r:
                errors.setdefault((r["stage"], r["error"]), []).append(r["layer"])
        for (stage, err), where in errors.items():
            msg = f"failed at {stage} on {args.device} ({', '.join(where)}): {err}"
            print(f"\nFAILED: {msg}")
            config_notes.append(f"{name}: {msg}")
        if args.tracebacks:
            for r in rows:
                if "traceback" in r:
                    print(r["traceback"])
                    break
        if errors and fallback and fallback not in done:
            print(f"\n-> falling back to {fallback}")
            config_notes.append(f"{fallback}: run in place of {name}")
            queue.insert(0, fallback)

    print("\n## Results\n")
    print("SQNR in dB, 10 log10(sum ref^2 / sum (ref - x)^2); 'float' is the model before "
          "prepare, in the same dtype; bit-identical: share of outputs where prepared == converted.\n")
    print("| config | dtype | layer | in->out | tokens | SQNR prepared vs converted | "
          "SQNR float vs prepared | SQNR float vs converted | bit-identical | max abs diff |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in all_rows:
        if "error" in r and r["stage"] == "prepare":
            tail = f"| failed at prepare | - | - | - | - |"
        elif "error" in r:
            tail = (f"| failed at convert | {fmt_db(r.get('sqnr_float_vs_prepared'))} | "
                    f"failed at convert | - | - |")
        else:
            tail = (f"| {fmt_db(r['sqnr_prepared_vs_converted'])} | "
                    f"{fmt_db(r['sqnr_float_vs_prepared'])} | "
                    f"{fmt_db(r['sqnr_float_vs_converted'])} | "
                    f"{100.0 * r['bit_identical_share']:.2f}% | {r['max_abs_diff']:.3g} |")
        print(f"| {r['config']} | {r['dtype']} | {r['layer']} | {r['shape']} | {r['tokens']} {tail}")
    for n in config_notes:
        print(f"\n- {n}")

    if args.json:
        out = {
            "torch": torch.__version__, "torchao": torchao.__version__,
            "numpy": np.__version__, "device": args.device, "cpu": cpu_flags(),
            "args": vars(args),
            "configs": {n: repr(CONFIGS[n][0](args)) for n in done},
            "rows": [{k: (None if isinstance(v, float) and math.isinf(v) and k.startswith("sqnr")
                          and v > 0 else v) if k != "traceback" else v
                      for k, v in r.items()} for r in all_rows],
            "notes": config_notes,
        }
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1, default=str)
        print(f"\nwrote {args.json} (SQNR inf written as null)")


if __name__ == "__main__":
    main()
