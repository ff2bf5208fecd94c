#!/usr/bin/env python3
"""Reads xquant's TensorBoard logs with TensorBoard's own reader and checks them (CTest).

  check_tensorboard_log.py values DIR    the log tests/io/test_tensorboard.cpp writes into
                                         $XQ_TENSORBOARD_FIXTURE_DIR: every scalar equals
                                         what fit returned (DIR/expected.json, as float32,
                                         TensorBoard's simple_value), the histograms and
                                         text are there, the calibration run has its
                                         histograms, and the torn copy of the train file
                                         (DIR/torn) reads as every record but the cut one
  check_tensorboard_log.py example DIR   the log of examples/fashion_mnist_qat --log-dir DIR:
                                         the runs and tags README and docs/tensorboard.md show

The reader is the `tensorboard` package from PyPI (scripts/install_onnx_deps.sh puts it in
the tools venv): `EventAccumulator` as `tensorboard --logdir` loads runs, and its
`EventFileLoader` for the torn file. Exit status 0 when every check holds; 1 with the
failures listed otherwise; 77 (CTest: skipped) where tensorboard cannot be imported.
"""

import json
import os
import sys

try:
    import numpy as np
    from tensorboard.backend.event_processing import event_accumulator as ea
    from tensorboard.backend.event_processing import event_file_loader
except ImportError as e:  # CTest reports the test skipped (SKIP_RETURN_CODE 77), with the reason
    print(f"skipped: {sys.executable} cannot import tensorboard and numpy ({e}): run scripts/install_onnx_deps.sh")
    sys.exit(77)

failures = []


def check(condition, what):
    if not condition:
        failures.append(what)
    return condition


def load(run_dir):
    acc = ea.EventAccumulator(run_dir, size_guidance={ea.SCALARS: 0, ea.HISTOGRAMS: 0, ea.TENSORS: 0})
    acc.Reload()
    return acc


def scalars(acc, tag):
    return {e.step: e.value for e in acc.Scalars(tag)} if tag in acc.Tags()["scalars"] else {}


def f32(x):
    return float(np.float32(x))


def text(acc, tag):
    if tag not in acc.Tags()["tensors"]:
        return ""
    return acc.Tensors(tag)[-1].tensor_proto.string_val[0].decode()


def check_values(d):
    expected = json.load(open(os.path.join(d, "expected.json")))
    train, validation = load(os.path.join(d, "fit", "train")), load(os.path.join(d, "fit", "validation"))
    metric = expected["metric_name"]
    epoch_loss, epoch_metric = scalars(train, "epoch_loss"), scalars(train, "epoch_" + metric)
    val_loss, val_metric = scalars(validation, "epoch_loss"), scalars(validation, "epoch_" + metric)
    for e in expected["epochs"]:
        k = e["epoch"]
        check(epoch_loss.get(k) == f32(e["loss"]), f"epoch_loss at epoch {k}: {epoch_loss.get(k)} != {f32(e['loss'])}")
        check(epoch_metric.get(k) == f32(e["metric"]), f"epoch_{metric} at epoch {k}")
        check(val_loss.get(k) == f32(e["val_loss"]), f"validation epoch_loss at epoch {k}")
        check(val_metric.get(k) == f32(e["val_metric"]), f"validation epoch_{metric} at epoch {k}")
        check(scalars(train, "epoch_samples_per_second").get(k) == f32(e["samples_per_second"]),
              f"epoch_samples_per_second at epoch {k}")
        for name, value in e.get("quantizer_metrics", {}).items():
            check(scalars(train, "epoch_" + name).get(k) == f32(value), f"epoch_{name} at epoch {k}")
    batch_loss, rate = scalars(train, "batch_loss"), scalars(train, "batch_learning_rate")
    check(sorted(batch_loss) == [s["global_step"] for s in expected["steps"]],
          f"batch_loss steps {sorted(batch_loss)}")
    for s in expected["steps"]:
        k = s["global_step"]
        check(batch_loss.get(k) == f32(s["loss"]), f"batch_loss at step {k}")
        check(rate.get(k) == f32(s["learning_rate"]), f"batch_learning_rate at step {k}")
    tags = train.Tags()
    for name in expected["epochs"][0].get("quantizer_metrics", {}):
        batch = scalars(train, "batch_" + name)
        check(sorted(batch) == sorted(batch_loss) and all(0.0 <= v <= 1.0 for v in batch.values()),
              f"batch_{name} at every logged step, in [0, 1]")
    for prefix in ("scale/", "zero_point/", "range_min/", "range_max/", "clipped/"):
        check(any(t.startswith(prefix) for t in tags["scalars"]), f"a scalar {prefix}<quantizer>")
    for t in tags["scalars"]:
        if t.startswith("clipped/"):
            check(all(0.0 <= v <= 1.0 for v in scalars(train, t).values()), f"{t} in [0, 1]")
    for prefix in ("weights/", "quantizer_input/", "quantizer_output/"):
        check(any(t.startswith(prefix) for t in tags["histograms"]), f"a histogram {prefix}<name>")
    for t in tags["histograms"]:
        if t.startswith("weights/"):
            h = train.Histograms(t)[-1].histogram_value
            check(h.num > 0 and len(h.bucket) == len(h.bucket_limit) and sum(h.bucket) == h.num, f"histogram {t}")
    check("| quantizer | kind | grid | clipped |" in text(train, "quantizers"), "the text `quantizers`")
    ptq = load(os.path.join(d, "ptq"))
    check(any(t.startswith("calibration_histogram/") for t in ptq.Tags()["histograms"]), "a calibration histogram")
    check(any(t.startswith("calibration_max/") for t in ptq.Tags()["scalars"]), "a calibration_max scalar")
    check("| quantizer | min | max |" in text(ptq, "calibration"), "the text `calibration`")
    # The torn file: TensorBoard's loader reads every whole record and drops the cut one.
    torn_dir = os.path.join(d, "torn")
    files = [os.path.join(torn_dir, f) for f in os.listdir(torn_dir) if "tfevents" in f]
    check(len(files) == 1, "one torn event file")
    events = list(event_file_loader.EventFileLoader(files[0]).Load())
    check(len(events) == expected["torn_records"],
          f"the torn file: {len(events)} records read, {expected['torn_records']} expected")
    load(torn_dir)  # the accumulator reads it without an error too
    return (f"{len(expected['epochs'])} epochs, {len(expected['steps'])} logged steps, "
            f"{len(tags['scalars'])} scalar tags, {len(tags['histograms'])} histogram tags, torn file "
            f"{len(events)} records")


def check_example(d):
    runs = {"float/train": ["epoch_loss", "epoch_accuracy", "batch_loss", "batch_learning_rate"],
            "qat/train": ["epoch_loss", "batch_loss"], "ptq": [], "deploy": ["parity_same_top1"]}
    seen = {}
    for run, wanted in runs.items():
        acc = load(os.path.join(d, run))
        seen[run] = acc.Tags()
        for tag in wanted:
            check(tag in seen[run]["scalars"], f"{run}: the scalar {tag}")
    qat = seen["qat/train"]
    for prefix in ("scale/", "range_max/", "clipped/"):
        check(any(t.startswith(prefix) for t in qat["scalars"]), f"qat/train: a scalar {prefix}<quantizer>")
    for prefix in ("weights/", "quantizer_output/"):
        check(any(t.startswith(prefix) for t in qat["histograms"]), f"qat/train: a histogram {prefix}<name>")
    check("quantizers" in qat["tensors"], "qat/train: the text `quantizers`")
    check(any(t.startswith("calibration_histogram/") for t in seen["ptq"]["histograms"]), "ptq: a calibration histogram")
    check("calibration" in seen["ptq"]["tensors"], "ptq: the text `calibration`")
    check(any(t.startswith("parity_identical/") for t in seen["deploy"]["scalars"]), "deploy: parity_identical/<tensor>")
    check("parity" in seen["deploy"]["tensors"], "deploy: the text `parity`")
    return ", ".join(f"{run}: {len(t['scalars'])} scalars, {len(t['histograms'])} histograms, {len(t['tensors'])} texts"
                     for run, t in seen.items())


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("values", "example"):
        print(__doc__)
        return 2
    summary = (check_values if sys.argv[1] == "values" else check_example)(sys.argv[2])
    for f in failures:
        print("FAIL:", f)
    print(("tensorboard log: FAILED " if failures else "tensorboard log: OK ") + summary)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
