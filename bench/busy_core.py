#!/usr/bin/env python3
"""The CNN training step, and a user-sized program, with another process keeping one core
busy (issues 15 and 34: two threads must be no slower than one on a shared machine).

Runs xquant_cnn_bench's BM_cnn_train_step on one thread and on two (OMP_NUM_THREADS; two is
what a user gets by default on a two-core machine), the same on two with the idle-core limit
off (XQ_IDLE_CORE_LIMIT=0: every region takes both threads however busy the machine, as
before issue 34; kernels/idle_cores.hpp), and BM_cnn_train_step_governed on two
(kernels::thread_governor picks each step's count, as fit does with thread_policy::adaptive),
first on the quiet machine, then beside a busy process (a Python loop that never sleeps),
round after round. Prints each case's step time and the ratios to the one-thread step of the
same round and condition (< 1: faster than one thread).

With --program (bench/user_program.cpp, build/bench/xquant_user_program) it runs that program
instead, in the same cases but the governed one: the README's nested net through fit,
evaluate, predict, calibrate and the integer engine, each phase timed, and the ratios are
of the whole program's wall time and of each phase's.

    python3 bench/busy_core.py --bench build/bench/xquant_cnn_bench --rounds 3
    python3 bench/busy_core.py --program build/bench/xquant_user_program --rounds 5
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys

CASES = [  # (name, benchmark, threads, extra environment)
    ("1 thread", "BM_cnn_train_step/batch:64/real_time", 1, {}),
    ("2 threads", "BM_cnn_train_step/batch:64/real_time", 2, {}),
    ("2 threads, no limit", "BM_cnn_train_step/batch:64/real_time", 2, {"XQ_IDLE_CORE_LIMIT": "0"}),
    ("2 threads, governed", "BM_cnn_train_step_governed/batch:64/real_time", 2, {}),
]
PROGRAM_CASES = [case for case in CASES if "governed" not in case[0]]


def program_seconds(program, threads, extra):
    """{phase: seconds} of one run of the user program (its `phase seconds=<s>` lines)."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads), **extra)
    out = subprocess.run([program], env=env, check=True, capture_output=True, text=True).stdout
    phases = {}
    for line in out.splitlines():
        m = re.match(r"(\w+) seconds=([0-9.]+)", line)
        if m:
            phases[m.group(1)] = float(m.group(2))
    if "total" not in phases:
        sys.exit(f"{program} printed no total: {out}")
    return phases


def step_ms(bench, name, threads, min_time, extra):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads), **extra)
    out = subprocess.run([bench, "--benchmark_filter=^" + name + "$",
                          "--benchmark_min_time=" + str(min_time), "--benchmark_format=json"],
                         env=env, check=True, capture_output=True, text=True).stdout
    runs = json.loads(out)["benchmarks"]
    if not runs:
        sys.exit(f"{bench} ran no benchmark named {name}")
    r = runs[0]
    scale = {"ms": 1.0, "us": 1e-3, "ns": 1e-6, "s": 1e3}[r["time_unit"]]
    note = ""
    if "governor_threads" in r:
        probes = ", ".join(f"{k[len('probe_ms_at_'):]}: {v:.1f} ms" for k, v in r.items() if k.startswith("probe_ms_at_"))
        note = f" (chose {int(r['governor_threads'])} thread(s) after {int(r['governor_probes'])} probe(s); last probe {probes})"
    return r["real_time"] * scale, note


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bench", default="build/bench/xquant_cnn_bench")
    ap.add_argument("--program", default=None, help="a program printing `phase seconds=<s>` lines (user_program.cpp)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--min-time", default="3", help="seconds per case (the governor probes within it)")
    args = ap.parse_args()

    ratios = {}
    for busy in (False, True):
        condition = "one core busy" if busy else "quiet"
        spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if busy else None
        try:
            for rnd in range(1, args.rounds + 1):
                load = os.getloadavg()[0]
                if args.program:
                    runs = {label: program_seconds(args.program, threads, extra)
                            for label, _, threads, extra in PROGRAM_CASES}
                    for label, phases in runs.items():
                        text = ", ".join(f"{k} {v:.3f} s" for k, v in phases.items())
                        print(f"{condition}, round {rnd} (load average {load:.1f}): {label}: {text}", flush=True)
                        for phase, seconds in phases.items():
                            ratios.setdefault((condition, label, phase), []).append(seconds / runs["1 thread"][phase])
                    continue
                times = {}
                for label, name, threads, extra in CASES:
                    times[label], more = step_ms(args.bench, name, threads, args.min_time, extra)
                    print(f"{condition}, round {rnd} (load average {load:.1f}): {label}: {times[label]:.1f} ms{more}",
                          flush=True)
                for label in times:
                    ratios.setdefault((condition, label, "step"), []).append(times[label] / times["1 thread"])
        finally:
            if spinner:
                spinner.kill()
                spinner.wait()
    what = "wall time" if args.program else "step time"
    print(f"\n{what} over the one-thread run of the same round (median [min..max] of rounds):")
    for (condition, label, phase), r in ratios.items():
        if label == "1 thread":
            continue
        print(f"  {condition:14s} {label:20s} {phase:10s} {statistics.median(r):.2f} [{min(r):.2f}..{max(r):.2f}]")


if __name__ == "__main__":
    main()
