#!/usr/bin/env python3
"""Golden vectors for xquant's padding, cropping, upsampling, GELU and layer-norm layers, its
broadcasting arithmetic, slicing, splitting and batched matmul, and its transposed and
separable convolutions, from TensorFlow/Keras 3 (issue 16).

Runs the Keras layers ZeroPadding2D, Cropping2D, UpSampling2D (nearest and bilinear),
LayerNormalization and the GELU activation (exact and tanh-approximate) on CPU, float32,
eager, with given weights, and records the forward output and the gradients of
sum(y * dy) for x and every weight.

Cases stress what a port gets wrong: asymmetric padding and cropping, upsampling factors
that differ per axis, bilinear's half-pixel centres at the borders (Keras 3 resizes with
tf.image.resize: half_pixel_centers, no antialias when enlarging), layer norm over the
last axis, over several axes and over a middle axis, with and without its scale and
centre, GELU far into both tails, operands broadcast along leading and inner axes (their
gradients summed back), matmul with either operand transposed and batch axes that
broadcast, and splits into equal and unequal parts (the gradient of every part).

Output: tests/data/golden/layers_shape_norm.json, floats as uint32 bit patterns (the
format of gen_golden.py; tests/golden.hpp reads it). Reduction order differs between TF
and xquant, so the C++ test compares with a relative tolerance. Deterministic: fixed
seeds, one thread.

Usage:  /work/venv-golden/bin/python tools/gen_golden_shape_norm_layers.py [--out DIR]
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

# The encoding and the gradient harness of the conv/pool generator (same directory).
from gen_golden_layers import DEFAULT_OUT, F, enc, grads, rand  # noqa: E402


def plain_case(rng, op, name, layer, x, **attrs):
    y, dy, g = grads(lambda xv: layer(xv), x, [], rng)
    return {"op": op, "name": name, **attrs, "x": enc(x), "y": enc(y), "dy": enc(dy), "dx": enc(g[0])}


def layer_norm_case(rng, name, x, axis, epsilon=1e-3, center=True, scale=True):
    layer = keras.layers.LayerNormalization(axis=axis, epsilon=epsilon, center=center, scale=scale)
    layer.build(x.shape)
    axes = [axis] if isinstance(axis, int) else list(axis)
    wshape = tuple(x.shape[a] for a in axes)
    gamma = rand(rng, wshape, 0.5, 1.5)
    beta = rand(rng, wshape, -0.5, 0.5)
    weights = []
    if scale:
        layer.gamma.assign(gamma)
        weights.append(layer.gamma)
    if center:
        layer.beta.assign(beta)
        weights.append(layer.beta)
    xv = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xv)
        y = layer(xv)
        dy = rand(rng, y.shape)
        loss = tf.reduce_sum(y * dy)
    g = tape.gradient(loss, [xv] + weights)
    case = {"op": "layer_norm", "name": name, "axis": axes, "epsilon": epsilon, "center": center, "scale": scale,
            "x": enc(x), "y": enc(y.numpy()), "dy": enc(dy), "dx": enc(g[0].numpy())}
    k = 1
    if scale:
        case["gamma"] = enc(gamma)
        case["dgamma"] = enc(g[k].numpy())
        k += 1
    if center:
        case["beta"] = enc(beta)
        case["dbeta"] = enc(g[k].numpy())
    return case


def binary_case(rng, op, name, fn, a, b, **attrs):
    """y = fn(a, b); gradients of sum(y * dy) for both."""
    av, bv = tf.constant(a), tf.constant(b)
    with tf.GradientTape() as tape:
        tape.watch([av, bv])
        y = fn(av, bv)
        dy = rand(rng, y.shape)
        loss = tf.reduce_sum(y * dy)
    da, db = tape.gradient(loss, [av, bv])
    return {"op": op, "name": name, **attrs, "a": enc(a), "b": enc(b), "y": enc(y.numpy()), "dy": enc(dy),
            "da": enc(da.numpy()), "db": enc(db.numpy())}


def split_case(rng, name, x, axis, parts):
    """tf.split(x, parts, axis); the gradient of sum over the parts of part * dy_part."""
    xv = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xv)
        ys = tf.split(xv, parts, axis=axis)
        dys = [rand(rng, y.shape) for y in ys]
        loss = tf.add_n([tf.reduce_sum(y * d) for y, d in zip(ys, dys)])
    dx = tape.gradient(loss, xv)
    return {"op": "split", "name": name, "axis": axis, "parts": parts if isinstance(parts, list) else [parts],
            "x": enc(x), "ys": [enc(y.numpy()) for y in ys], "dys": [enc(d) for d in dys], "dx": enc(dx.numpy())}


def weighted_layer_grads(rng, layer, x_shape, weights):
    """x drawn for `layer` (built, its weights assigned); y, dy and the gradients of
    sum(y * dy) for x and each of `weights`."""
    x = rand(rng, x_shape)
    xv = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xv)
        y = layer(xv)
        dy = rand(rng, y.shape)
        loss = tf.reduce_sum(y * dy)
    g = tape.gradient(loss, [xv] + weights)
    return x, y.numpy(), dy, [t.numpy() for t in g]


def conv_transpose_case(rng, name, x_shape, k, filters, strides, padding, use_bias=True):
    """Keras Conv2DTranspose with given weights; gradients for x, the kernel and the bias."""
    layer = keras.layers.Conv2DTranspose(filters, k, strides=strides, padding=padding, use_bias=use_bias)
    layer.build(x_shape)
    kernel = rand(rng, tuple(layer.kernel.shape))  # (KH, KW, filters, C)
    layer.kernel.assign(kernel)
    weights = [layer.kernel]
    if use_bias:
        bias = rand(rng, (filters,))
        layer.bias.assign(bias)
        weights.append(layer.bias)
    x, y, dy, g = weighted_layer_grads(rng, layer, x_shape, weights)
    case = {"op": "conv2d_transpose", "name": name, "filters": filters, "kernel_size": list(k),
            "strides": list(strides), "padding": padding, "x": enc(x),
            "kernel": enc(kernel), "y": enc(y), "dy": enc(dy), "dx": enc(g[0]), "dkernel": enc(g[1])}
    if use_bias:
        case["bias"] = enc(bias)
        case["dbias"] = enc(g[2])
    return case


def separable_case(rng, name, x_shape, k, filters, strides, padding, dilation=(1, 1), depth_multiplier=1,
                   use_bias=True):
    """Keras SeparableConv2D with given weights; gradients for x and every weight."""
    layer = keras.layers.SeparableConv2D(filters, k, strides=strides, padding=padding, dilation_rate=dilation,
                                         depth_multiplier=depth_multiplier, use_bias=use_bias)
    layer.build(x_shape)
    depthwise = rand(rng, tuple(layer.depthwise_kernel.shape))  # (KH, KW, C, M)
    pointwise = rand(rng, tuple(layer.pointwise_kernel.shape))  # (1, 1, C*M, F)
    layer.depthwise_kernel.assign(depthwise)
    layer.pointwise_kernel.assign(pointwise)
    weights = [layer.depthwise_kernel, layer.pointwise_kernel]
    if use_bias:
        bias = rand(rng, (filters,))
        layer.bias.assign(bias)
        weights.append(layer.bias)
    x, y, dy, g = weighted_layer_grads(rng, layer, x_shape, weights)
    case = {"op": "separable_conv2d", "name": name, "filters": filters, "kernel_size": list(k),
            "strides": list(strides), "padding": padding, "dilation": list(dilation),
            "depth_multiplier": depth_multiplier, "x": enc(x), "depthwise_kernel": enc(depthwise),
            "pointwise_kernel": enc(pointwise), "y": enc(y), "dy": enc(dy), "dx": enc(g[0]),
            "ddepthwise_kernel": enc(g[1]), "dpointwise_kernel": enc(g[2])}
    if use_bias:
        case["bias"] = enc(bias)
        case["dbias"] = enc(g[3])
    return case


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=DEFAULT_OUT)
    args = ap.parse_args()
    rng = np.random.default_rng(20261124)
    cases = []

    # zero_padding2d: symmetric, asymmetric, only one side.
    for name, pad in [("1 all round", ((1, 1), (1, 1))), ("asymmetric", ((2, 0), (1, 3))),
                      ("height only", ((0, 2), (0, 0)))]:
        cases.append(plain_case(rng, "zero_padding2d", name, keras.layers.ZeroPadding2D(padding=pad),
                                rand(rng, (2, 4, 5, 3)), padding=[list(pad[0]), list(pad[1])]))

    # cropping2d
    for name, crop in [("1 all round", ((1, 1), (1, 1))), ("asymmetric", ((2, 0), (1, 3))),
                       ("width only", ((0, 0), (2, 1)))]:
        cases.append(plain_case(rng, "cropping2d", name, keras.layers.Cropping2D(cropping=crop),
                                rand(rng, (2, 6, 7, 3)), cropping=[list(crop[0]), list(crop[1])]))

    # upsampling2d: nearest and bilinear, factors per axis, odd sizes (border weights).
    for interp in ("nearest", "bilinear"):
        for name, size, shape in [("2x2", (2, 2), (2, 3, 4, 3)), ("3x2", (3, 2), (1, 5, 3, 2)),
                                  ("1x4", (1, 4), (2, 2, 3, 1)), ("2x2 on 1x1", (2, 2), (1, 1, 1, 2))]:
            cases.append(plain_case(rng, "upsampling2d", f"{interp} {name}",
                                    keras.layers.UpSampling2D(size=size, interpolation=interp),
                                    rand(rng, shape), size=list(size), interpolation=interp))

    # gelu: exact (erf) and the tanh approximation, over a range that reaches both tails.
    for approximate in (False, True):
        x = np.concatenate([np.linspace(-12, 12, 97, dtype=F), rand(rng, (63,), -3, 3),
                            np.array([0.0, -0.0, 1e-8, -1e-8, 40.0, -40.0], dtype=F)]).reshape(2, 83)
        layer = keras.layers.Activation(lambda t: keras.activations.gelu(t, approximate=approximate))
        cases.append(plain_case(rng, "gelu", "tanh" if approximate else "erf", layer, x, approximate=approximate))

    # layer_norm: the last axis, the last two, a middle one; without scale or centre; the
    # default epsilon (1e-3) and a small one; a near-constant row (variance ~ epsilon).
    cases.append(layer_norm_case(rng, "last axis", rand(rng, (3, 4, 8)), -1))
    cases.append(layer_norm_case(rng, "last axis eps 1e-6", rand(rng, (5, 16)), -1, epsilon=1e-6))
    cases.append(layer_norm_case(rng, "axes 2 and 3", rand(rng, (2, 3, 4, 5)), [2, 3]))
    cases.append(layer_norm_case(rng, "middle axis", rand(rng, (2, 6, 3)), 1))
    cases.append(layer_norm_case(rng, "no scale", rand(rng, (4, 7)), -1, scale=False))
    cases.append(layer_norm_case(rng, "no centre", rand(rng, (4, 7)), -1, center=False))
    near = (np.full((3, 10), 0.25, dtype=F) + rand(rng, (3, 10), -0.01, 0.01)).astype(F)
    cases.append(layer_norm_case(rng, "near-constant rows", near, -1))

    # Broadcasting arithmetic (keras.ops.add/subtract/multiply broadcast as NumPy does).
    for op, fn in [("broadcast_add", keras.ops.add), ("subtract", keras.ops.subtract),
                   ("broadcast_multiply", keras.ops.multiply)]:
        for name, sa, sb in [("same shape", (2, 3), (2, 3)), ("bias on the last axis", (2, 3, 4), (4,)),
                             ("both broadcast", (2, 1, 4), (1, 3, 1)), ("rank differs, inner 1", (3, 1), (2, 1, 4))]:
            cases.append(binary_case(rng, op, name, fn, rand(rng, sa), rand(rng, sb)))

    # Batched matmul (keras.ops.matmul; tf.linalg.matmul for the transposed forms).
    for name, sa, sb, ta, tb in [("2-D", (3, 4), (4, 5), False, False),
                                 ("batched", (2, 3, 4), (2, 4, 5), False, False),
                                 ("transpose b (attention scores)", (2, 2, 3, 4), (2, 2, 5, 4), False, True),
                                 ("transpose a", (2, 4, 3), (2, 4, 5), True, False),
                                 ("both transposed", (4, 3), (5, 4), True, True),
                                 ("batch axes broadcast", (2, 1, 3, 4), (3, 4, 2), False, False)]:
        fn = lambda a, b, ta=ta, tb=tb: tf.linalg.matmul(a, b, transpose_a=ta, transpose_b=tb)
        cases.append(binary_case(rng, "matmul", name, fn, rand(rng, sa), rand(rng, sb),
                                 transpose_a=ta, transpose_b=tb))

    # Slicing and splitting.
    for name, shape, axis, begin, end in [("channels", (2, 3, 4, 5), -1, 1, 4), ("middle axis", (3, 6, 2), 1, 2, 5),
                                          ("first axis", (5, 3), 0, 0, 2)]:
        x = rand(rng, shape)
        index = [slice(None)] * len(shape)
        index[axis] = slice(begin, end)
        cases.append(plain_case(rng, "slice", name, keras.layers.Lambda(lambda t, i=tuple(index): t[i]), x,
                                axis=axis, begin=begin, end=end))
    cases.append(split_case(rng, "three equal parts of the last axis", rand(rng, (2, 3, 6)), -1, 3))
    cases.append(split_case(rng, "sizes 2 and 5 of axis 1", rand(rng, (2, 7, 3)), 1, [2, 5]))

    # Transposed convolution: strides, both paddings (valid grows by max(k - s, 0)), a
    # kernel smaller than the stride, non-square kernels and strides.
    for case in [("3x3 stride 2 same", (2, 4, 5, 3), (3, 3), 4, (2, 2), "same"),
                 ("3x3 stride 2 valid", (1, 4, 3, 2), (3, 3), 3, (2, 2), "valid"),
                 ("4x4 stride 2 same (even kernel)", (1, 3, 4, 2), (4, 4), 2, (2, 2), "same"),
                 ("2x2 stride 3 valid (kernel below the stride)", (2, 3, 3, 2), (2, 2), 3, (3, 3), "valid"),
                 ("3x2 strides 2x1 same", (1, 5, 4, 3), (3, 2), 2, (2, 1), "same"),
                 ("1x1 stride 1 valid", (2, 3, 3, 4), (1, 1), 3, (1, 1), "valid")]:
        cases.append(conv_transpose_case(rng, *case))
    # (TF's CPU kernels refuse dilation in Conv2DBackpropInput: xquant's is gradient-checked.)
    cases.append(conv_transpose_case(rng, "3x3 stride 1 same no bias", (1, 5, 6, 2), (3, 3), 3, (1, 1), "same",
                                     use_bias=False))

    # Separable convolution: a depthwise multiplier, a stride with both paddings, dilation, no
    # bias. (TF's CPU depthwise kernel refuses unequal strides.)
    for case in [("3x3 same multiplier 1", (2, 5, 5, 3), (3, 3), 4, (1, 1), "same"),
                 ("3x3 stride 2 valid multiplier 2", (1, 7, 6, 2), (3, 3), 3, (2, 2), "valid", (1, 1), 2),
                 ("3x2 stride 2 same (non-square kernel)", (2, 6, 5, 3), (3, 2), 2, (2, 2), "same"),
                 ("3x3 dilation 2 same", (1, 7, 7, 2), (3, 3), 3, (1, 1), "same", (2, 2))]:
        cases.append(separable_case(rng, *case))
    cases.append(separable_case(rng, "1x1 no bias multiplier 3", (2, 3, 4, 2), (1, 1), 5, (1, 1), "valid",
                                depth_multiplier=3, use_bias=False))

    doc = {"generator": "tools/gen_golden_shape_norm_layers.py",
           "versions": {"tensorflow": tf.__version__, "keras": keras.__version__, "numpy": np.__version__},
           "cases": cases}
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "layers_shape_norm.json")
    with open(path, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")
    counts = {}
    for c in cases:
        counts[c["op"]] = counts.get(c["op"], 0) + 1
    print(path, ", ".join(f"{k}: {v}" for k, v in counts.items()))


if __name__ == "__main__":
    main()
