#!/usr/bin/env python3
"""Golden vectors for xquant's multi_head_attention, from Keras 3's MultiHeadAttention
(issue 16).

Runs keras.layers.MultiHeadAttention on CPU, float32, eager, with given weights (Keras's
shapes: query/key kernels (d, heads, key_dim), value kernel (d, heads, value_dim), output
kernel (heads, value_dim, d_out), biases shaped as their heads), dropout 0, and records the
output and the gradients of sum(y * dy) for the query, value and key inputs and every
weight.

Cases stress what a port gets wrong: self-attention (one tensor as query, key and value:
its gradient sums three uses), cross-attention with a separate key, a value_dim other than
key_dim and an output width other than the query's, an attention mask with a row masked
entirely (Keras sets masked scores to -1e9; without dropout it computes through
ops.dot_product_attention, which leaves such a row uniform over the keys), the causal mask,
and no biases.

Output: tests/data/golden/layers_attention.json, floats as uint32 bit patterns (the format
of gen_golden.py; tests/golden.hpp reads it). Deterministic: fixed seeds, one thread.

Usage:  /work/venv-golden/bin/python tools/gen_golden_attention.py [--out DIR]
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


def attention_case(rng, name, heads, key_dim, q_shape, v_shape=None, separate_key=False, value_dim=None,
                   output_shape=None, mask=None, causal=False, use_bias=True):
    self_attention = v_shape is None
    layer = keras.layers.MultiHeadAttention(num_heads=heads, key_dim=key_dim, value_dim=value_dim,
                                            output_shape=output_shape, use_bias=use_bias)
    q = rand(rng, q_shape)
    v = q if self_attention else rand(rng, v_shape)
    k = rand(rng, v_shape) if separate_key else None
    layer.build(q.shape, v.shape, None if k is None else k.shape)
    parts = [("query", layer._query_dense), ("key", layer._key_dense), ("value", layer._value_dense),
             ("output", layer._output_dense)]
    weights, record = [], {}
    for label, dense in parts:
        kernel = rand(rng, tuple(dense.kernel.shape), -0.5, 0.5)
        dense.kernel.assign(kernel)
        weights.append(dense.kernel)
        record[label + "_kernel"] = enc(kernel)
        if use_bias:
            bias = rand(rng, tuple(dense.bias.shape), -0.5, 0.5)
            dense.bias.assign(bias)
            weights.append(dense.bias)
            record[label + "_bias"] = enc(bias)
    qv, vv = tf.constant(q), tf.constant(v)
    kv = None if k is None else tf.constant(k)
    watched = [qv] if self_attention else [qv, vv] + ([kv] if kv is not None else [])
    with tf.GradientTape() as tape:
        for t in watched:
            tape.watch(t)
        y = layer(qv, qv if self_attention else vv, key=kv,
                  attention_mask=None if mask is None else tf.constant(mask.astype(bool)), use_causal_mask=causal)
        dy = rand(rng, y.shape)
        loss = tf.reduce_sum(y * dy)
    g = tape.gradient(loss, watched + weights)
    g = [t.numpy() for t in g]
    case = {"name": name, "heads": heads, "key_dim": key_dim, "value_dim": value_dim or key_dim,
            "output_dim": output_shape or q_shape[-1], "use_bias": use_bias, "causal": causal,
            "self_attention": self_attention, "query": enc(q), "y": enc(y.numpy()), "dy": enc(dy),
            "dquery": enc(g[0]), **record}
    if not self_attention:
        case["value"] = enc(v)
        case["dvalue"] = enc(g[1])
        if k is not None:
            case["key"] = enc(k)
            case["dkey"] = enc(g[2])
    if mask is not None:
        case["mask"] = enc(mask.astype(np.float32))
    grads_of_weights = g[len(watched):]
    for (label, _), i in zip(parts, range(len(parts))):
        per = 2 if use_bias else 1
        case["d" + label + "_kernel"] = enc(grads_of_weights[i * per])
        if use_bias:
            case["d" + label + "_bias"] = enc(grads_of_weights[i * per + 1])
    return case


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=DEFAULT_OUT)
    out = ap.parse_args().out
    rng = np.random.default_rng(20261124)
    cases = [attention_case(rng, "self-attention 2 heads", 2, 4, (2, 5, 8)),
             attention_case(rng, "cross-attention, separate key, value_dim 3, output 5", 3, 2, (2, 3, 6), (2, 4, 7),
                            separate_key=True, value_dim=3, output_shape=5)]
    mask = (rng.random((2, 4, 6)) > 0.4)
    mask[1, 2, :] = False  # a row that attends to nothing
    mask[0, 0, :] = True
    cases.append(attention_case(rng, "attention mask with a fully masked row", 2, 3, (2, 4, 6), (2, 6, 6), mask=mask))
    cases.append(attention_case(rng, "causal self-attention", 2, 4, (2, 6, 8), causal=True))
    cases.append(attention_case(rng, "no bias", 2, 3, (1, 4, 6), (1, 5, 6), use_bias=False))

    doc = {"generator": "tools/gen_golden_attention.py",
           "versions": {"tensorflow": tf.__version__, "keras": keras.__version__, "numpy": np.__version__},
           "cases": cases}
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "layers_attention.json")
    with open(path, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")
    print(path, len(cases), "cases")


if __name__ == "__main__":
    main()
