#!/usr/bin/env python3
"""Golden vectors for xquant's convolution and pooling layers, from TensorFlow/Keras.

Runs Keras 3 layers (Conv2D, DepthwiseConv2D, AveragePooling2D, MaxPooling2D,
GlobalAveragePooling2D, GlobalMaxPooling2D) and tf.nn.conv2d (strides and dilation
together, which Keras refuses) on CPU, float32, eager, with given weights, and records
the forward output and the gradients of sum(y * dy) for x and every weight.

Cases stress what differs between frameworks: odd sizes with `same` padding and
strides (TF pads the odd zero after), dilation, even kernels, average pooling's
division by the non-padded count at the border, max pooling ties (TF routes to the
first maximum), global max ties (TF splits the gradient evenly).

Output: tests/data/golden/layers_conv_pool.json, floats as uint32 bit patterns
(same format as gen_golden.py; tests/golden.hpp reads it). GEMM and reduction order
differ between TF and xquant, so the C++ test compares with a relative tolerance.
The file is deterministic: fixed seeds, one thread.

Usage:  /work/venv-golden/bin/python tools/gen_golden_layers.py [--out DIR]
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ["CUDA_VISIBLE_DEVICES"] = ""
# TF's own (Eigen) CPU kernels, not oneDNN's. With oneDNN the file differs only by float
# rounding (summation order; at most 7e-6 absolute here); max-pool tie routing is the same.
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import argparse
import json
import sys

import numpy as np
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402

tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(1)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(REPO, "tests", "data", "golden")
F = np.float32


def enc(a):
    a = np.ascontiguousarray(np.asarray(a, dtype=F))
    return {"shape": list(a.shape), "f32": a.reshape(-1).view(np.uint32).tolist()}


def rand(rng, shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, size=shape).astype(F)


def distinct(rng, shape):
    """Values without ties or near-ties: a shuffled ramp."""
    n = int(np.prod(shape))
    return (rng.permutation(n).astype(F) / F(n) * F(2) - F(1)).reshape(shape)


def grads(fn, x, weights, rng):
    """y = fn(x, *weights); gradients of sum(y * dy) for x and the weights."""
    xv = tf.constant(x)
    ws = [tf.Variable(w) for w in weights]
    with tf.GradientTape() as tape:
        tape.watch(xv)
        y = fn(xv, *ws)
        dy = rand(rng, y.shape)
        loss = tf.reduce_sum(y * dy)
    g = tape.gradient(loss, [xv] + ws)
    return y.numpy(), dy, [t.numpy() for t in g]


def conv_case(rng, name, x_shape, k, filters, strides, padding, dilation, use_bias=True, keras_layer=True):
    x = rand(rng, x_shape)
    kernel = rand(rng, (k[0], k[1], x_shape[3], filters))
    bias = rand(rng, (filters,))

    if keras_layer:
        # What Keras 3's Conv2D.call computes (ops.conv, then the bias), with our weights as
        # variables so the gradient reaches them; checked against the layer below.
        def fn(xv, *ws):
            y = keras.ops.conv(xv, ws[0], strides=strides, padding=padding, dilation_rate=dilation,
                               data_format="channels_last")
            return keras.ops.add(y, keras.ops.reshape(ws[1], (1, 1, 1, -1))) if len(ws) > 1 else y
    else:  # Keras refuses strides and dilation together; tf.nn.conv2d takes them
        def fn(xv, *ws):
            y = tf.nn.conv2d(xv, ws[0], strides=strides, padding=padding.upper(), dilations=dilation)
            return tf.nn.bias_add(y, ws[1]) if len(ws) > 1 else y
    weights = [kernel, bias] if use_bias else [kernel]
    if not keras_layer:  # TF's CPU Conv2DBackprop* refuse dilation > 1: forward only
        y = fn(tf.constant(x), *[tf.constant(w) for w in weights]).numpy()
        case = {"op": "conv2d", "name": name, "strides": list(strides), "padding": padding,
                "dilation": list(dilation), "x": enc(x), "kernel": enc(kernel), "y": enc(y)}
        if use_bias:
            case["bias"] = enc(bias)
        return case
    y, dy, g = grads(fn, x, weights, rng)
    if keras_layer:
        layer = keras.layers.Conv2D(filters, k, strides=strides, padding=padding, dilation_rate=dilation,
                                    use_bias=use_bias)
        layer.build(x_shape)
        layer.kernel.assign(kernel)
        if use_bias:
            layer.bias.assign(bias)
        np.testing.assert_allclose(layer(x).numpy(), y, rtol=1e-6, atol=1e-6)
    case = {"op": "conv2d", "name": name, "strides": list(strides), "padding": padding,
            "dilation": list(dilation), "x": enc(x), "kernel": enc(kernel), "y": enc(y), "dy": enc(dy),
            "dx": enc(g[0]), "dkernel": enc(g[1])}
    if use_bias:
        case["bias"] = enc(bias)
        case["dbias"] = enc(g[2])
    return case


def depthwise_case(rng, name, x_shape, k, multiplier, strides, padding, dilation, use_bias=True):
    x = rand(rng, x_shape)
    kernel = rand(rng, (k[0], k[1], x_shape[3], multiplier))
    bias = rand(rng, (x_shape[3] * multiplier,))

    def fn(xv, *ws):
        y = keras.ops.depthwise_conv(xv, ws[0], strides=strides, padding=padding, dilation_rate=dilation,
                                     data_format="channels_last")
        if len(ws) > 1:
            y = keras.ops.add(y, keras.ops.reshape(ws[1], (1, 1, 1, -1)))
        return y

    # Check that the functional form is what the Keras layer computes.
    layer = keras.layers.DepthwiseConv2D(k, strides=strides, padding=padding, depth_multiplier=multiplier,
                                         dilation_rate=dilation, use_bias=use_bias)
    layer.build(x_shape)
    layer.kernel.assign(kernel)  # Keras 3 calls it "kernel"; tf_keras 2 "depthwise_kernel"
    if use_bias:
        layer.bias.assign(bias)
    weights = [kernel, bias] if use_bias else [kernel]
    y, dy, g = grads(fn, x, weights, rng)
    np.testing.assert_allclose(layer(x).numpy(), y, rtol=1e-6, atol=1e-6)
    case = {"op": "depthwise_conv2d", "name": name, "strides": list(strides), "padding": padding,
            "dilation": list(dilation), "x": enc(x), "kernel": enc(kernel), "y": enc(y), "dy": enc(dy),
            "dx": enc(g[0]), "dkernel": enc(g[1])}
    if use_bias:
        case["bias"] = enc(bias)
        case["dbias"] = enc(g[2])
    return case


def pool_case(rng, op, name, x, pool, strides, padding):
    cls = {"average_pool2d": keras.layers.AveragePooling2D, "max_pool2d": keras.layers.MaxPooling2D}[op]
    layer = cls(pool_size=pool, strides=strides, padding=padding)
    y, dy, g = grads(lambda xv: layer(xv), x, [], rng)
    return {"op": op, "name": name, "pool_size": list(pool), "strides": list(strides), "padding": padding,
            "x": enc(x), "y": enc(y), "dy": enc(dy), "dx": enc(g[0])}


def global_case(rng, op, name, x):
    cls = {"global_average_pool2d": keras.layers.GlobalAveragePooling2D,
           "global_max_pool2d": keras.layers.GlobalMaxPooling2D}[op]
    layer = cls()
    y, dy, g = grads(lambda xv: layer(xv), x, [], rng)
    return {"op": op, "name": name, "x": enc(x), "y": enc(y), "dy": enc(dy), "dx": enc(g[0])}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=DEFAULT_OUT)
    args = ap.parse_args()
    rng = np.random.default_rng(20250601)
    cases = []

    # conv2d: odd sizes with same/valid and strides, dilation, even and non-square kernels.
    cases.append(conv_case(rng, "3x3 valid stride 1", (2, 7, 9, 3), (3, 3), 4, (1, 1), "valid", (1, 1)))
    cases.append(conv_case(rng, "3x3 same stride 2 odd", (2, 7, 9, 3), (3, 3), 4, (2, 2), "same", (1, 1)))
    cases.append(conv_case(rng, "3x3 valid stride 2 odd", (1, 9, 8, 2), (3, 3), 3, (2, 2), "valid", (1, 1)))
    cases.append(conv_case(rng, "4x4 same stride 3 (pad split)", (1, 10, 11, 2), (4, 4), 3, (3, 3), "same", (1, 1)))
    cases.append(conv_case(rng, "2x2 same stride 1 (pad after)", (1, 5, 6, 2), (2, 2), 2, (1, 1), "same", (1, 1)))
    cases.append(conv_case(rng, "3x2 same strides 2x1", (2, 8, 7, 3), (3, 2), 5, (2, 1), "same", (1, 1)))
    cases.append(conv_case(rng, "3x3 dilation 2 same", (2, 9, 7, 3), (3, 3), 4, (1, 1), "same", (2, 2)))
    cases.append(conv_case(rng, "3x3 dilation 2 valid", (1, 9, 10, 2), (3, 3), 3, (1, 1), "valid", (2, 2)))
    cases.append(conv_case(rng, "3x3 dilation 2x3 same no bias", (1, 8, 11, 2), (3, 3), 3, (1, 1), "same", (2, 3),
                           use_bias=False))
    cases.append(conv_case(rng, "3x3 stride 2 dilation 2 same (tf.nn)", (1, 11, 9, 2), (3, 3), 3, (2, 2), "same",
                           (2, 2), keras_layer=False))
    cases.append(conv_case(rng, "1x1 valid (pointwise)", (2, 5, 4, 6), (1, 1), 4, (1, 1), "valid", (1, 1)))
    cases.append(conv_case(rng, "1x1 stride 2 same", (1, 5, 7, 3), (1, 1), 2, (2, 2), "same", (1, 1)))
    cases.append(conv_case(rng, "5x5 same on 3x4", (1, 3, 4, 2), (5, 5), 2, (1, 1), "same", (1, 1)))
    cases.append(conv_case(rng, "3x3 same 32->16", (2, 6, 6, 32), (3, 3), 16, (1, 1), "same", (1, 1)))

    # depthwise_conv2d
    cases.append(depthwise_case(rng, "3x3 same", (2, 7, 6, 3), (3, 3), 1, (1, 1), "same", (1, 1)))
    cases.append(depthwise_case(rng, "3x3 multiplier 2 stride 2 same odd", (2, 9, 7, 3), (3, 3), 2, (2, 2), "same",
                                (1, 1)))
    cases.append(depthwise_case(rng, "3x2 valid multiplier 3", (1, 6, 7, 2), (3, 2), 3, (1, 1), "valid", (1, 1)))
    cases.append(depthwise_case(rng, "3x3 dilation 2 same", (1, 9, 8, 4), (3, 3), 1, (1, 1), "same", (2, 2),
                                use_bias=False))

    # average pooling: same padding divides by the non-padded count at the border.
    cases.append(pool_case(rng, "average_pool2d", "2x2 valid", rand(rng, (2, 6, 7, 3)), (2, 2), (2, 2), "valid"))
    cases.append(pool_case(rng, "average_pool2d", "3x3 stride 2 same odd", rand(rng, (2, 7, 8, 3)), (3, 3), (2, 2),
                           "same"))
    cases.append(pool_case(rng, "average_pool2d", "2x2 stride 2 same odd (edge counts)", rand(rng, (1, 5, 5, 2)),
                           (2, 2), (2, 2), "same"))
    cases.append(pool_case(rng, "average_pool2d", "3x2 strides 1x2 same", rand(rng, (1, 5, 6, 2)), (3, 2), (1, 2),
                           "same"))

    # max pooling: distinct values, and ties (TF: the gradient goes to the first maximum).
    cases.append(pool_case(rng, "max_pool2d", "2x2 valid", distinct(rng, (2, 6, 7, 3)), (2, 2), (2, 2), "valid"))
    cases.append(pool_case(rng, "max_pool2d", "3x3 stride 2 same odd", distinct(rng, (2, 7, 8, 3)), (3, 3), (2, 2),
                           "same"))
    cases.append(pool_case(rng, "max_pool2d", "3x3 stride 1 same, negative (padding never wins)",
                           distinct(rng, (1, 5, 5, 2)) - F(2), (3, 3), (1, 1), "same"))
    ties = np.round(rand(rng, (2, 6, 6, 3), 0, 2)).astype(F)  # 0, 1, 2: many ties
    cases.append(pool_case(rng, "max_pool2d", "3x3 stride 2 valid with ties", ties, (3, 3), (2, 2), "valid"))
    cases.append(pool_case(rng, "max_pool2d", "2x2 stride 1 same with ties", ties, (2, 2), (1, 1), "same"))

    # global pooling
    cases.append(global_case(rng, "global_average_pool2d", "5x6", rand(rng, (3, 5, 6, 4))))
    cases.append(global_case(rng, "global_max_pool2d", "5x6 distinct", distinct(rng, (3, 5, 6, 4))))
    cases.append(global_case(rng, "global_max_pool2d", "4x4 with ties", ties[:, :4, :4, :]))

    doc = {"generator": "tools/gen_golden_layers.py",
           "versions": {"tensorflow": tf.__version__, "keras": keras.__version__, "numpy": np.__version__},
           "onednn": os.environ.get("TF_ENABLE_ONEDNN_OPTS"),
           "cases": cases}
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "layers_conv_pool.json")
    with open(path, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")
    counts = {}
    for c in cases:
        counts[c["op"]] = counts.get(c["op"], 0) + 1
    print(path, counts, file=sys.stderr)


if __name__ == "__main__":
    main()
