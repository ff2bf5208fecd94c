#!/usr/bin/env python3
"""The CNN training step with another process keeping one core busy (issue 15: two threads
must be no slower than one on a shared machine).

Runs xquant_cnn_bench's BM_cnn_train_step on one thread and on two (OMP_NUM_THREADS), and
BM_cnn_train_step_governed on two (kernels::thread_governor picks each step's count, as
fit does with thread_policy::adaptive), first on the quiet machine, then beside a busy
process (a Python loop that never sleeps), round after round. Prints each case's step time
and the ratios to the one-thread step of the same round and condition (< 1: faster than
one thread).

    python3 bench/busy_core.py --bench build/bench/xquant_cnn_bench --rounds 3
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

CASES = [  # (name, benchmark, threads)
    ("1 thread", "BM_cnn_train_step/batch:64/real_time", 1),
    ("2 threads", "BM_cnn_train_step/batch:64/real_time", 2),
    ("2 threads, governed", "BM_cnn_train_step_governed/batch:64/real_time", 2),
]


def step_ms(bench, name, threads, min_time):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads))
    out = subprocess.run([bench, "--benchmark_filter=^" + name + "$",
                          "--benchmark_min_time=" + str(min_time), "--benchmark_format=json"],
                         env=env, check=True, capture_output=True, text=True).stdout
    runs = json.loads(out)["benchmarks"]
    if not runs:
        sys.exit(f"{bench} ran no benchmark named {name}")
    r = runs[0]
    scale = {"ms": 1.0, "us": 1e-3, "ns": 1e-6, "s": 1e3}[r["time_unit"]]
    extra = ""
    if "governor_threads" in r:
        probes = ", ".join(f"{k[len('probe_ms_at_'):]}: {v:.1f} ms" for k, v in r.items() if k.startswith("probe_ms_at_"))
        extra = f" (chose {int(r['governor_threads'])} thread(s) after {int(r['governor_probes'])} probe(s); last probe {probes})"
    return r["real_time"] * scale, extra


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bench", default="build/bench/xquant_cnn_bench")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--min-time", default="3", help="seconds per case (the governor probes within it)")
    args = ap.parse_args()

    ratios = {}
    for busy in (False, True):
        condition = "one core busy" if busy else "quiet"
        spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if busy else None
        try:
            for rnd in range(1, args.rounds + 1):
                times = {}
                for label, name, threads in CASES:
                    times[label], extra = step_ms(args.bench, name, threads, args.min_time)
                    print(f"{condition}, round {rnd}: {label}: {times[label]:.1f} ms{extra}", flush=True)
                for label in times:
                    ratios.setdefault((condition, label), []).append(times[label] / times["1 thread"])
        finally:
            if spinner:
                spinner.kill()
                spinner.wait()
    print("\nstep time over the one-thread step of the same round (median [min..max] of rounds):")
    for (condition, label), r in ratios.items():
        print(f"  {condition:14s} {label:20s} {statistics.median(r):.2f} [{min(r):.2f}..{max(r):.2f}]")


if __name__ == "__main__":
    main()
