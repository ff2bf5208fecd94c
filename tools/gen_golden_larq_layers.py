#!/usr/bin/env python3
"""Golden vectors for xquant's quant layers, from Larq itself.

Runs Larq's QuantDense, QuantConv2D, QuantDepthwiseConv2D and QuantSeparableConv2D
(Larq 0.14 on tf_keras, so TF_USE_LEGACY_KERAS=1) with `ste_sign` input and kernel
quantizers, on CPU, float32, eager, with kernels and bias set explicitly, and records
the forward output and the gradients of sum(y * dy) for the input, every latent kernel
and the bias.

Why the comparison can be bit for bit: the quantized inputs and kernels are +-1, dy is
a small integer and the bias a multiple of 1/4, so every sum (forward, kernel and input
gradients) is exact in float32 whatever the summation order. Inputs and latent kernels
are drawn from [-1.5, 1.5], so the clipped STE masks (|v| <= 1) are exercised: entries
with |v| > 1 get no gradient.

Cases: padding "valid" and "same" with pad_values 0.0 and 1.0 (Larq pads the quantized
input with the value, then runs a valid convolution), strides 1 and 2 on odd and even
sizes (TF puts the odd padding row/column after), an even kernel, dilation, depth
multipliers, with and without bias.

Output: tests/data/golden/larq_layers.json, floats as uint32 bit patterns (the format
of gen_golden.py; tests/golden.hpp reads it). Deterministic: fixed seed, one thread.

Usage:  TF_USE_LEGACY_KERAS=1 /work/venv-golden/bin/python tools/gen_golden_larq_layers.py [--out DIR]
"""

import os

os.environ["TF_USE_LEGACY_KERAS"] = "1"  # Larq 0.14 needs tf_keras (Keras 2)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ["CUDA_VISIBLE_DEVICES"] = ""
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import argparse
import json
import logging
import sys

import numpy as np
import tensorflow as tf  # noqa: E402
import larq as lq  # noqa: E402

tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(1)
# Larq warns about binary kernels without a constraint; the constraint plays no part here.
logging.getLogger("larq").setLevel(logging.ERROR)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(REPO, "tests", "data", "golden")
F = np.float32


def enc(a):
    a = np.ascontiguousarray(np.asarray(a, dtype=F))
    return {"shape": list(a.shape), "f32": a.reshape(-1).view(np.uint32).tolist()}


def rand(rng, shape, lo=-1.5, hi=1.5):
    return rng.uniform(lo, hi, size=shape).astype(F)


def quarter_ints(rng, shape, lo=-8, hi=8):
    """Multiples of 1/4: adding one to an integer sum is exact."""
    return (rng.integers(lo, hi + 1, size=shape) / 4.0).astype(F)


def run(rng, layer, x, weights):
    """Sets `weights` (in Keras's order), runs the layer; gradients of sum(y * dy)."""
    layer.build(x.shape)
    assert [tuple(w.shape) for w in layer.get_weights()] == [w.shape for w in weights], (
        [w.shape for w in layer.get_weights()], [w.shape for w in weights])
    layer.set_weights(weights)
    xv = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xv)
        y = layer(xv)
        dy = rng.integers(-3, 4, size=y.shape).astype(F)
        loss = tf.reduce_sum(y * dy)
    variables = layer.trainable_weights
    grads = tape.gradient(loss, [xv] + variables)
    return y.numpy(), dy, [g.numpy() for g in grads]


def case(op, name, settings, x, weights, y, dy, grads):
    return {"op": op, "name": name, "settings": settings, "x": enc(x), "weights": [enc(w) for w in weights],
            "dy": enc(dy), "y": enc(y), "dx": enc(grads[0]), "dweights": [enc(g) for g in grads[1:]]}


def dense_case(rng, name, x_shape, units, use_bias=True):
    x = rand(rng, x_shape)
    weights = [rand(rng, (x_shape[-1], units))]
    if use_bias:
        weights.append(quarter_ints(rng, (units,)))
    layer = lq.layers.QuantDense(units, use_bias=use_bias, input_quantizer="ste_sign", kernel_quantizer="ste_sign")
    y, dy, g = run(rng, layer, x, weights)
    return case("quant_dense", name, {"units": units, "use_bias": use_bias}, x, weights, y, dy, g)


def conv_settings(kernel_size, strides, padding, pad_values, dilation, use_bias, **extra):
    return {"kernel_size": list(kernel_size), "strides": list(strides), "padding": padding,
            "pad_values": pad_values, "dilation": list(dilation), "use_bias": use_bias, **extra}


def conv_case(rng, name, x_shape, filters, k, strides=(1, 1), padding="valid", pad_values=0.0, dilation=(1, 1),
              use_bias=True):
    x = rand(rng, x_shape)
    weights = [rand(rng, (k[0], k[1], x_shape[3], filters))]
    if use_bias:
        weights.append(quarter_ints(rng, (filters,)))
    layer = lq.layers.QuantConv2D(filters, k, strides=strides, padding=padding, pad_values=pad_values,
                                  dilation_rate=dilation, use_bias=use_bias, input_quantizer="ste_sign",
                                  kernel_quantizer="ste_sign")
    y, dy, g = run(rng, layer, x, weights)
    s = conv_settings(k, strides, padding, pad_values, dilation, use_bias, filters=filters)
    return case("quant_conv2d", name, s, x, weights, y, dy, g)


def depthwise_case(rng, name, x_shape, k, multiplier=1, strides=(1, 1), padding="valid", pad_values=0.0,
                   dilation=(1, 1), use_bias=True):
    x = rand(rng, x_shape)
    weights = [rand(rng, (k[0], k[1], x_shape[3], multiplier))]
    if use_bias:
        weights.append(quarter_ints(rng, (x_shape[3] * multiplier,)))
    layer = lq.layers.QuantDepthwiseConv2D(k, strides=strides, padding=padding, pad_values=pad_values,
                                           depth_multiplier=multiplier, dilation_rate=dilation, use_bias=use_bias,
                                           input_quantizer="ste_sign", depthwise_quantizer="ste_sign")
    y, dy, g = run(rng, layer, x, weights)
    s = conv_settings(k, strides, padding, pad_values, dilation, use_bias, depth_multiplier=multiplier)
    return case("quant_depthwise_conv2d", name, s, x, weights, y, dy, g)


def separable_case(rng, name, x_shape, filters, k, multiplier=1, strides=(1, 1), padding="valid", pad_values=0.0,
                   dilation=(1, 1), use_bias=True):
    x = rand(rng, x_shape)
    c = x_shape[3]
    weights = [rand(rng, (k[0], k[1], c, multiplier)), rand(rng, (1, 1, c * multiplier, filters))]
    if use_bias:
        weights.append(quarter_ints(rng, (filters,)))
    layer = lq.layers.QuantSeparableConv2D(filters, k, strides=strides, padding=padding, pad_values=pad_values,
                                           depth_multiplier=multiplier, dilation_rate=dilation, use_bias=use_bias,
                                           input_quantizer="ste_sign", depthwise_quantizer="ste_sign",
                                           pointwise_quantizer="ste_sign")
    y, dy, g = run(rng, layer, x, weights)
    s = conv_settings(k, strides, padding, pad_values, dilation, use_bias, filters=filters,
                      depth_multiplier=multiplier)
    return case("quant_separable_conv2d", name, s, x, weights, y, dy, g)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=DEFAULT_OUT)
    args = ap.parse_args()
    rng = np.random.default_rng(20240606)
    tf.random.set_seed(1)

    cases = [
        dense_case(rng, "5 -> 4", (3, 5), 4),
        dense_case(rng, "7 -> 3, rank 3, no bias", (2, 3, 7), 3, use_bias=False),

        conv_case(rng, "3x3 valid", (2, 5, 6, 3), 4, (3, 3)),
        conv_case(rng, "3x3 same pad 1", (2, 5, 5, 3), 4, (3, 3), padding="same", pad_values=1.0),
        conv_case(rng, "3x3 same pad 0", (2, 5, 5, 3), 4, (3, 3), padding="same", pad_values=0.0),
        conv_case(rng, "3x3 stride 2 same pad 1 even (odd padding after)", (2, 6, 6, 2), 3, (3, 3), (2, 2), "same",
                  1.0),
        conv_case(rng, "3x3 stride 2 same pad 1 odd", (1, 7, 5, 2), 3, (3, 3), (2, 2), "same", 1.0),
        conv_case(rng, "2x2 same pad 1 (asymmetric)", (2, 4, 5, 3), 2, (2, 2), padding="same", pad_values=1.0),
        conv_case(rng, "3x3 dilation 2 same pad 1, no bias", (1, 7, 7, 2), 3, (3, 3), padding="same", pad_values=1.0,
                  dilation=(2, 2), use_bias=False),
        conv_case(rng, "3x2 strides 1x2 same pad 0", (2, 5, 6, 2), 3, (3, 2), (1, 2), "same", 0.0),

        depthwise_case(rng, "3x3 valid", (2, 5, 5, 3), (3, 3)),
        depthwise_case(rng, "3x3 multiplier 2 same pad 1", (2, 5, 6, 3), (3, 3), 2, padding="same", pad_values=1.0),
        depthwise_case(rng, "3x3 stride 2 same pad 1 even", (1, 6, 6, 2), (3, 3), 1, (2, 2), "same", 1.0),
        depthwise_case(rng, "3x3 stride 2 same pad 0, no bias", (2, 6, 5, 2), (3, 3), 2, (2, 2), "same", 0.0,
                       use_bias=False),

        separable_case(rng, "3x3 valid", (2, 5, 5, 3), 4, (3, 3)),
        separable_case(rng, "3x3 multiplier 2 same pad 1", (2, 5, 6, 2), 3, (3, 3), 2, padding="same",
                       pad_values=1.0),
        separable_case(rng, "3x3 stride 2 same pad 1 even, no bias", (1, 6, 6, 3), 4, (3, 3), 1, (2, 2), "same", 1.0,
                       use_bias=False),
        separable_case(rng, "2x2 same pad 0", (2, 4, 5, 2), 3, (2, 2), padding="same", pad_values=0.0),
    ]

    doc = {"generator": "tools/gen_golden_larq_layers.py",
           "versions": {"larq": lq.__version__, "tensorflow": tf.__version__, "numpy": np.__version__},
           "cases": cases}
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "larq_layers.json")
    with open(path, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")
    counts = {}
    for c in cases:
        counts[c["op"]] = counts.get(c["op"], 0) + 1
    print(path, counts, file=sys.stderr)


if __name__ == "__main__":
    main()
