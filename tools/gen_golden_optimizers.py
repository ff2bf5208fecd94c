#!/usr/bin/env python3
"""Golden values for xquant's optimizers: five steps of torch.optim.SGD, Adam and AdamW.

Output: tests/data/golden/optimizers.json, read by tests/train/test_optimizers.cpp.

Each case starts two float32 parameters from fixed random values, feeds the same
random gradients to PyTorch's optimizer for five steps and records, after every step,
the parameters and the optimizer state (momentum_buffer; step / exp_avg / exp_avg_sq /
max_exp_avg_sq).  Some cases leave a gradient out (grad None: PyTorch skips that
parameter, its state and, for Adam, its own step count), some change the learning rate
between steps (a schedule).

Format: {"generator", "versions", "cases": [...]}; a case has "optimizer" (sgd, adam,
adamw), "name", "options" (PyTorch's hyper-parameters as JSON numbers: Python floats,
i.e. doubles), "initial" (list of tensors) and "steps": a list of {"lr", "grads" (a
tensor or null per parameter), "params", "state"}.  Tensors are
{"shape", "f32": [uint32 bit patterns]} as in tools/gen_golden.py.

Deterministic: fixed seed, single-threaded, the single-tensor ("for-loop") code path
(foreach=False: the CPU default), ATEN_CPU_CAPABILITY pinned to avx2.

Usage:  /work/venv-golden/bin/python tools/gen_golden_optimizers.py [--out DIR]
"""

import os

os.environ["CUDA_VISIBLE_DEVICES"] = ""
os.environ.setdefault("ATEN_CPU_CAPABILITY", "avx2")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(1)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(REPO, "tests", "data", "golden")
SHAPES = [(3, 4), (5,)]
STEPS = 5


def enc(a):
    a = np.array(a.detach().cpu().numpy() if isinstance(a, torch.Tensor) else a, dtype=np.float32, order="C")
    return {"shape": [int(s) for s in a.shape], "f32": [int(v) for v in a.reshape(-1).view(np.uint32)]}


def run_case(name, kind, options, seed, missing=(), lrs=None):
    """missing: (step, param index) pairs whose gradient is None.  lrs: lr per step."""
    rng = np.random.default_rng(seed)
    params = [torch.tensor(rng.standard_normal(s).astype(np.float32), requires_grad=True) for s in SHAPES]
    cls = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "adamw": torch.optim.AdamW}[kind]
    kwargs = dict(options)
    if "betas" in kwargs:
        kwargs["betas"] = tuple(kwargs["betas"])
    opt = cls(params, foreach=False, **kwargs)
    case = {"optimizer": kind, "name": name, "options": options,
            "initial": [enc(p) for p in params], "steps": []}
    for k in range(STEPS):
        grads = []
        for i, p in enumerate(params):
            g = (rng.standard_normal(p.shape) * 0.5).astype(np.float32)
            if (k, i) in missing:
                p.grad = None
                grads.append(None)
            else:
                p.grad = torch.tensor(g)
                grads.append(enc(g))
        if lrs is not None:
            for group in opt.param_groups:
                group["lr"] = lrs[k]
        lr = opt.param_groups[0]["lr"]
        opt.step()
        state = []
        for p in params:
            st = opt.state.get(p, {})
            rec = {}
            for key, value in st.items():
                if key == "step":
                    rec["step"] = int(value.item())
                elif value is not None:
                    rec[key] = enc(value)
            state.append(rec)
        case["steps"].append({"lr": lr, "grads": grads, "params": [enc(p) for p in params], "state": state})
    return case


def cases():
    schedule = [0.1, 0.1, 0.05, 0.05, 0.025]
    yield run_case("sgd_plain", "sgd", {"lr": 0.1}, 1)
    yield run_case("sgd_weight_decay", "sgd", {"lr": 0.1, "weight_decay": 0.1}, 2)
    yield run_case("sgd_momentum", "sgd", {"lr": 0.05, "momentum": 0.9}, 3)
    yield run_case("sgd_momentum_dampening", "sgd", {"lr": 0.05, "momentum": 0.9, "dampening": 0.1}, 4)
    yield run_case("sgd_nesterov_weight_decay", "sgd",
                   {"lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 0.01}, 5)
    yield run_case("sgd_momentum_schedule_missing_grad", "sgd", {"lr": 0.1, "momentum": 0.9}, 6,
                   missing={(0, 1), (2, 1)}, lrs=schedule)
    yield run_case("adam_default", "adam", {}, 7)
    yield run_case("adam_custom_weight_decay", "adam",
                   {"lr": 0.01, "betas": [0.8, 0.99], "eps": 1e-6, "weight_decay": 0.05}, 8)
    yield run_case("adam_amsgrad", "adam", {"lr": 0.01, "amsgrad": True}, 9)
    yield run_case("adam_missing_grad", "adam", {"lr": 0.01}, 10, missing={(0, 1), (2, 1)})
    yield run_case("adamw_default", "adamw", {}, 11)
    yield run_case("adamw_custom", "adamw",
                   {"lr": 0.01, "betas": [0.85, 0.995], "eps": 1e-7, "weight_decay": 0.1, "amsgrad": True}, 12)
    yield run_case("adamw_schedule_missing_grad", "adamw", {"lr": 0.1, "weight_decay": 0.05}, 13,
                   missing={(1, 0)}, lrs=schedule)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=DEFAULT_OUT)
    args = ap.parse_args()
    all_cases = list(cases())
    versions = {"torch": torch.__version__, "numpy": np.__version__}
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "optimizers.json")
    with open(path, "w") as fh:
        fh.write('{"generator": "tools/gen_golden_optimizers.py",\n')
        fh.write(' "versions": %s,\n' % json.dumps(versions, sort_keys=True))
        fh.write(' "cases": [\n')
        for i, c in enumerate(all_cases):
            fh.write(json.dumps(c, separators=(",", ":")))
            fh.write(",\n" if i + 1 < len(all_cases) else "\n")
        fh.write(']}\n')
    print("%s: %d cases" % (path, len(all_cases)), file=sys.stderr)


if __name__ == "__main__":
    main()
