#!/usr/bin/env python3
"""Golden vectors for xquant's lstm and gru, from Keras 3's LSTM and GRU (issue 16).

Runs keras.layers.LSTM / GRU on CPU, float32, eager (the generic loop over the cell, what
Keras computes without cuDNN), with given weights in Keras's layouts: kernel (features,
gates * units), recurrent_kernel (units, gates * units), bias (4 units) for the LSTM and
(2, 3 units) for the GRU (reset_after=True: input bias, recurrent bias). Gates in Keras's
order: LSTM i, f, c, o; GRU z, r, h. Records the output and the gradients of sum(y * dy)
for the input and every weight.

Cases: the last output only and the whole sequence, go_backwards, no bias, one time step,
and a GRU with reset_after=False (one bias, the reset gate applied before the recurrent
product).

Output: tests/data/golden/layers_recurrent.json, floats as uint32 bit patterns (the format
of gen_golden.py; tests/golden.hpp reads it). Deterministic: fixed seeds, one thread.

Usage:  /work/venv-golden/bin/python tools/gen_golden_recurrent.py [--out DIR]
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ["CUDA_VISIBLE_DEVICES"] = ""
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import argparse
import json

import numpy as np
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402

from gen_golden_layers import DEFAULT_OUT, enc, rand  # noqa: E402


def recurrent_case(rng, name, kind, units, x_shape, return_sequences=False, go_backwards=False, use_bias=True,
                   reset_after=True):
    if kind == "lstm":
        layer = keras.layers.LSTM(units, return_sequences=return_sequences, go_backwards=go_backwards,
                                  use_bias=use_bias)
    else:
        layer = keras.layers.GRU(units, return_sequences=return_sequences, go_backwards=go_backwards,
                                 use_bias=use_bias, reset_after=reset_after)
    x = rand(rng, x_shape)
    layer.build(x.shape)
    cell = layer.cell
    weights = [cell.kernel, cell.recurrent_kernel] + ([cell.bias] if use_bias else [])
    record = {}
    for label, w in zip(["kernel", "recurrent_kernel", "bias"], weights):
        value = rand(rng, tuple(w.shape), -0.6, 0.6)
        w.assign(value)
        record[label] = enc(value)
    xv = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xv)
        y = layer(xv)
        dy = rand(rng, y.shape)
        loss = tf.reduce_sum(y * dy)
    g = [t.numpy() for t in tape.gradient(loss, [xv] + weights)]
    case = {"name": name, "kind": kind, "units": units, "return_sequences": return_sequences,
            "go_backwards": go_backwards, "use_bias": use_bias, "reset_after": reset_after, "x": enc(x),
            "y": enc(y.numpy()), "dy": enc(dy), "dx": enc(g[0]), **record}
    for label, grad in zip(["dkernel", "drecurrent_kernel", "dbias"], g[1:]):
        case[label] = enc(grad)
    return case


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=DEFAULT_OUT)
    out = ap.parse_args().out
    tf.config.threading.set_inter_op_parallelism_threads(1)
    tf.config.threading.set_intra_op_parallelism_threads(1)
    rng = np.random.default_rng(20261125)
    cases = []
    for kind in ("lstm", "gru"):
        cases.append(recurrent_case(rng, kind + " last output", kind, 4, (2, 5, 3)))
        cases.append(recurrent_case(rng, kind + " sequences", kind, 3, (3, 4, 5), return_sequences=True))
        cases.append(recurrent_case(rng, kind + " go_backwards sequences", kind, 3, (2, 6, 2), return_sequences=True,
                                    go_backwards=True))
        cases.append(recurrent_case(rng, kind + " no bias", kind, 5, (2, 3, 4), use_bias=False))
        cases.append(recurrent_case(rng, kind + " one step", kind, 2, (4, 1, 3)))
    cases.append(recurrent_case(rng, "gru reset_after false", "gru", 3, (2, 5, 4), return_sequences=True,
                                reset_after=False))

    doc = {"generator": "tools/gen_golden_recurrent.py",
           "versions": {"tensorflow": tf.__version__, "keras": keras.__version__, "numpy": np.__version__},
           "cases": cases}
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "layers_recurrent.json")
    with open(path, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")
    print(path, len(cases), "cases")


if __name__ == "__main__":
    main()
