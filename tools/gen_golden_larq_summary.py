#!/usr/bin/env python3
"""Golden tables for xq::summarize / xq::print_summary: what `larq.models.summary` prints.

Output: tests/data/golden/larq_summary.json, read by tests/summary/test_model_summary.cpp.

Cases (each model built after `tf.keras.backend.clear_session()`, so Keras's layer names
restart at "conv2d", "sequential", ...):
  - profile_model: larq/models_test.py's `get_profile_model` (Larq's snapshot "test_summary 1");
  - profile_model_no_macs: the same with `include_macs=False`;
  - submodel: `get_submodel_profile_model()` (layers 2..4 as a nested Sequential, one row);
  - float_cnn: Conv2D(8, 3, same) on 10x10x3, MaxPooling2D(2), Flatten, Dense(4);
  - any_bits: QuantConv2D(16, 3, same, input DoReFa(k_bit=4), kernel NoOp(precision=8)) on
    8x8x3, Flatten, QuantDense(10, input NoOp(precision=3), kernel DoReFa(k_bit=5, weights)),
    Dense(2, trainable=False): weight columns 5, 8, 32 bits; MAC columns 5, 8, 32 bits.

Format: {"generator", "versions", "cases": [{"name", "text"}]}: "text" is everything
`summary` printed (both tables, each followed by a newline).

Needs Larq 0.14 on TensorFlow with the legacy Keras (tf_keras):
    TF_USE_LEGACY_KERAS=1 /work/venv-golden/bin/python tools/gen_golden_larq_summary.py [--out DIR]
Deterministic (no random values reach the tables); a second run gives the same file.
"""

import os

os.environ["CUDA_VISIBLE_DEVICES"] = ""
os.environ["TF_USE_LEGACY_KERAS"] = "1"
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402

import tensorflow as tf  # noqa: E402
import larq as lq  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(REPO, "tests", "data", "golden")


def get_profile_model():  # larq/models_test.py
    return tf.keras.models.Sequential(
        [
            lq.layers.QuantConv2D(filters=32, kernel_size=(3, 3), kernel_quantizer="ste_sign",
                                  input_shape=(64, 64, 1), padding="same"),
            tf.keras.layers.MaxPooling2D((2, 2)),
            lq.layers.QuantDepthwiseConv2D(kernel_size=3, strides=(3, 3), input_quantizer=lq.quantizers.SteTern(),
                                           depthwise_quantizer=lq.quantizers.SteTern(), padding="same",
                                           pad_values=1.0, use_bias=False),
            tf.keras.layers.BatchNormalization(scale=False),
            lq.layers.QuantSeparableConv2D(32, (3, 3), input_quantizer="ste_sign", depthwise_quantizer="ste_sign",
                                           pointwise_quantizer="ste_sign", padding="same"),
            tf.keras.layers.Flatten(),
            tf.keras.layers.Dense(10, trainable=False),
        ],
    )


def get_submodel_profile_model(start_index=2, end_index=5):  # larq/models_test.py
    model = get_profile_model()
    submodel = tf.keras.models.Sequential([layer for layer in model.layers[start_index:end_index]])
    return tf.keras.models.Sequential([*model.layers[:start_index], submodel, *model.layers[end_index:]])


def float_cnn():
    return tf.keras.models.Sequential(
        [
            tf.keras.layers.Conv2D(8, 3, padding="same", input_shape=(10, 10, 3)),
            tf.keras.layers.MaxPooling2D(2),
            tf.keras.layers.Flatten(),
            tf.keras.layers.Dense(4),
        ]
    )


def any_bits():
    return tf.keras.models.Sequential(
        [
            lq.layers.QuantConv2D(16, 3, padding="same", input_shape=(8, 8, 3),
                                  input_quantizer=lq.quantizers.DoReFa(k_bit=4, mode="activations"),
                                  kernel_quantizer=lq.quantizers.NoOp(precision=8)),
            tf.keras.layers.Flatten(),
            lq.layers.QuantDense(10, input_quantizer=lq.quantizers.NoOp(precision=3),
                                 kernel_quantizer=lq.quantizers.DoReFa(k_bit=5, mode="weights")),
            tf.keras.layers.Dense(2, trainable=False),
        ]
    )


def printed(make, include_macs=True):
    tf.keras.backend.clear_session()
    lines = []
    lq.models.summary(make(), print_fn=lines.append, include_macs=include_macs)
    return "".join(line + "\n" for line in lines)  # what print() writes


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=DEFAULT_OUT)
    args = ap.parse_args()
    cases = [
        {"name": "profile_model", "text": printed(get_profile_model)},
        {"name": "profile_model_no_macs", "text": printed(get_profile_model, include_macs=False)},
        {"name": "submodel", "text": printed(get_submodel_profile_model)},
        {"name": "float_cnn", "text": printed(float_cnn)},
        {"name": "any_bits", "text": printed(any_bits)},
    ]
    versions = {"tensorflow": tf.__version__, "larq": lq.__version__}
    path = os.path.join(args.out, "larq_summary.json")
    with open(path, "w") as fh:
        json.dump({"generator": "tools/gen_golden_larq_summary.py", "versions": versions, "cases": cases}, fh,
                  indent=1, sort_keys=True)
        fh.write("\n")
    print("%s: %d cases" % (path, len(cases)), file=sys.stderr)


if __name__ == "__main__":
    main()
