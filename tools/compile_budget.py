#!/usr/bin/env python3
"""Compile-time budget of xquant: what a translation unit costs over its dependencies alone.

What is measured
----------------
For each measured translation unit (TU), the CPU seconds the compiler takes to compile it
(`-c`, object file written to a scratch directory): user + sys time of the compiler process
and everything it runs (cc1plus, as), from resource.getrusage(RUSAGE_CHILDREN) deltas, the
N runs (--repeat, default 3). The TU and its reference are measured in pairs, one right after
the other, and the ratio is the median of the pairs' ratios: load on a shared machine comes in
phases longer than one pair, so it hits both halves of a pair and cancels, and the median
drops the pairs a burst hit on one side. (The ratio of the two minima, also printed, is not
robust there: one lucky reference run decides it; on a shared 2-core machine the same
umbrella measured 1.34 to 1.58 that way within one hour.) A TU over its budget after N runs is
measured up to K more times (--confirm, default N), stopping once within it: a TU really over
its budget stays over, however many runs. Every run's seconds are printed under its line, with
the minima. CPU seconds, not wall time, and a ratio, not seconds: machine speed and most of
the load of a shared machine cancel.

Each TU is compiled with exactly the command the build uses for it: the compiler and flags
come from CMake's compile_commands.json (--compile-commands; CMake writes it when
CMAKE_EXPORT_COMPILE_COMMANDS is ON, which -DXQ_COMPILE_BUDGET=ON sets), or, by hand, from
--cxx and --cxxflags. --include, --define and --flag add to either.

The reference of a TU is a "deps-only" TU generated from it: the compiler runs on the
measured TU with `-v -H -fsyntax-only`, which prints the include search list and the
include tree. The reference includes every header that is NOT part of xquant but is
included directly by something that IS, in the order the compiler first opened them:

  - part of xquant: the TU itself, a header under <search dir>/xquant/ (for any directory of
    the include search list, so the xquant of -I<repo>/include), and the TU's own local
    headers: a header found outside every directory of the search list, i.e. through a
    quoted path relative to its includer (examples/fashion_mnist/cnn.hpp for the QAT
    example); --internal DIR adds a directory;
  - everything else (the standard library, xtensor, xsimd, nlohmann/json, zlib, ...) is a
    dependency. A dependency first opened by another dependency is not listed: it comes in
    through the one that is.

Headers are written as `#include <name>` relative to the search directory they were found
in (so that #include_next in the C library wrappers behaves as in the real TU), or by
absolute path when no search directory resolves the name to the same file.

Budgets (exit status 1 if a ratio is over its budget, unless --report-only)
--------------------------------------------------------------------------
  1. umbrella: a TU made of `#include <xquant/xquant.hpp>` and `int main() { return 0; }`
     costs at most 1.5 x the same TU made of its dependencies alone (empty main).
     --umbrella HEADER:BUDGET changes it, --no-umbrella drops it.
  2. every --tu NAME=PATH:BUDGET (the README example and the Fashion-MNIST QAT example are
     registered with budget 3): the TU costs at most BUDGET x its deps-only TU that also
     instantiates one xtensor expression, so that the reference pays for xtensor's
     templates as any program does:

       int main() { xt::xarray<float> a = {1.0f, 2.0f};
                    xt::xarray<float> b = a * 2.0f + 1.0f; return int(b(0)); }

Output: one line per measured TU with its seconds, the reference's seconds, the ratio, the
budget and PASS/FAIL, then a summary. Exit status: 0 all within budget (or --report-only),
1 a ratio over its budget, 2 a usage error or a TU that does not compile.

Examples. From a build configured with -DCMAKE_EXPORT_COMPILE_COMMANDS=ON (or
-DXQ_COMPILE_BUDGET=ON), each TU with its own command:

  python3 tools/compile_budget.py --compile-commands build/compile_commands.json \\
      --umbrella-flags-from build/tests/xquant_header_check_separate/xquant_xquant_hpp.cpp \\
      --tu readme=build/tests/readme_example.cpp:3 \\
      --tu qat=examples/fashion_mnist_qat/fashion_mnist_qat.cpp:3 --report-only

Without compile_commands.json, the compiler and its flags by hand (after a lone --):

  python3 tools/compile_budget.py --tu readme=build/tests/readme_example.cpp:3 \\
      --cxx c++ -- -Iinclude -O3 -DNDEBUG -ffp-contract=off -fopenmp -march=native
"""

import argparse
import json
import os
import platform
import re
import resource
import shlex
import subprocess
import sys
import tempfile

EXPRESSION_MAIN = ("int main() { xt::xarray<float> a = {1.0f, 2.0f}; "
                   "xt::xarray<float> b = a * 2.0f + 1.0f; return int(b(0)); }\n")
EMPTY_MAIN = "int main() { return 0; }\n"
LAUNCHERS = {"ccache", "sccache", "distcc", "icecc"}


class Error(Exception):
    pass


# ---- compile commands -------------------------------------------------------------------

def strip_command(args, source, directory):
    """The compiler and the flags of a compile command, without the launcher, the source,
    the output and the dependency-file options (they name this build's own files)."""
    args = list(args)
    while args and os.path.basename(args[0]) in LAUNCHERS:
        args.pop(0)
    if not args:
        raise Error("empty compile command")
    compiler, rest = args[0], args[1:]
    source_real = os.path.realpath(os.path.join(directory, source))
    flags = []
    skip_next = False
    for a in rest:
        if skip_next:
            skip_next = False
            continue
        if a in ("-o", "-MF", "-MT", "-MQ"):
            skip_next = True
            continue
        if a in ("-c", "-MD", "-MMD", "-MP") or a.startswith(("-MF", "-MT", "-MQ", "-o")):
            continue
        if not a.startswith("-") and os.path.realpath(os.path.join(directory, a)) == source_real:
            continue
        flags.append(a)
    return compiler, flags


class CompileCommands:
    def __init__(self, path):
        try:
            with open(path) as f:
                self.entries = json.load(f)
        except (OSError, ValueError) as e:
            raise Error(f"cannot read {path}: {e}")
        self.path = path

    def find(self, source):
        """(compiler, flags, directory) of the first entry that compiles `source`."""
        want = os.path.realpath(source)
        for e in self.entries:
            d = e.get("directory", ".")
            if os.path.realpath(os.path.join(d, e["file"])) != want:
                continue
            args = e["arguments"] if "arguments" in e else shlex.split(e["command"])
            compiler, flags = strip_command(args, e["file"], d)
            return compiler, flags, d
        return None


# ---- running the compiler ---------------------------------------------------------------

def run(cmd, cwd):
    """(CPU seconds of the child and its children, completed process)."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    seconds = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return seconds, p


def under(path, directory):
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def include_tree(compiler, flags, source, cwd):
    """From `-v -H -fsyntax-only`: (search dirs, <...> search dirs, [(depth, header)]), each
    path as the compiler printed it, made absolute and normalized (symlinks kept)."""
    _, p = run([compiler, *flags, "-v", "-H", "-fsyntax-only", source], cwd)
    if p.returncode != 0:
        raise Error(f"{source} does not compile:\n{p.stderr[-4000:]}")
    quote_dirs, angle_dirs, headers = [], [], []
    section = None
    for line in p.stderr.splitlines():
        if line.startswith('#include "..." search starts here'):
            section = quote_dirs
            continue
        if line.startswith("#include <...> search starts here"):
            section = angle_dirs
            continue
        if line.startswith("End of search list"):
            section = None
            continue
        if section is not None:
            if line.startswith(" "):
                d = line.strip()
                if not d.endswith(" (framework directory)"):
                    section.append(os.path.normpath(os.path.join(cwd, d)))
            continue
        m = re.match(r"^(\.+) (.+)$", line)
        if m:
            headers.append((len(m.group(1)), os.path.normpath(os.path.join(cwd, m.group(2)))))
    if not angle_dirs:
        raise Error(f"no include search list in the output of {compiler} -v (not GCC or Clang?)")
    return quote_dirs + [d for d in angle_dirs if d not in quote_dirs], angle_dirs, headers


def spelling(header, angle_dirs):
    """How to #include `header` so that the compiler finds this very file: its name relative
    to the first search directory that holds it, as the compiler found it (a symlinked
    <cblas.h> stays <cblas.h>), or its absolute path."""
    real = os.path.realpath(header)
    for d in angle_dirs:
        if under(header, d):
            rel = os.path.relpath(header, d)
            for d2 in angle_dirs:
                candidate = os.path.join(d2, rel)
                if os.path.isfile(candidate):
                    if os.path.realpath(candidate) == real:
                        return f"<{rel}>"
                    break
    return f'"{header}"'


def direct_dependencies(compiler, flags, source, cwd, extra_internal):
    """The non-xquant headers that the TU, xquant or the TU's local headers include directly,
    each as an #include spelling, in the order they were first opened."""
    search_dirs, angle_dirs, headers = include_tree(compiler, flags, source, cwd)
    real_search_dirs = [os.path.realpath(d) for d in search_dirs]
    tu = os.path.realpath(os.path.join(cwd, source))
    internal_dirs = [os.path.join(d, "xquant") for d in real_search_dirs
                     if os.path.isdir(os.path.join(d, "xquant"))]
    internal_dirs += [os.path.realpath(d) for d in extra_internal]

    def internal(path):
        real = os.path.realpath(path)
        if real == tu or any(under(real, d) for d in internal_dirs):
            return True
        # A local header of the TU: found through a path relative to its includer, outside
        # every directory of the search list.
        return not any(under(path, d) for d in search_dirs) and \
            not any(under(real, d) for d in real_search_dirs)

    stack = [tu]
    kept, seen = [], set()
    for depth, path in headers:
        del stack[depth:]
        parent = stack[-1]
        stack.append(path)
        real = os.path.realpath(path)
        if internal(parent) and not internal(path) and real not in seen:
            seen.add(real)
            kept.append(path)
    return [spelling(h, angle_dirs) for h in kept]


# ---- the measured TUs -------------------------------------------------------------------

class Tu:
    def __init__(self, name, source, budget, reference_main):
        self.name, self.source, self.budget = name, os.path.abspath(source), budget
        self.reference_main = reference_main
        self.compiler = self.flags = self.cwd = None
        self.reference = None
        self.deps = []
        self.seconds = self.reference_seconds = float("inf")
        self.samples, self.reference_samples = [], []   # every run, in order

    def ratio_of_minima(self):
        return self.seconds / self.reference_seconds if self.reference_seconds > 0 else float("inf")

    def ratio(self):
        """The median of the runs' ratios, each TU run over the reference run made right after it."""
        pairs = sorted(a / b if b > 0 else float("inf") for a, b in zip(self.samples, self.reference_samples))
        if not pairs:
            return float("inf")
        mid = len(pairs) // 2
        return pairs[mid] if len(pairs) % 2 else (pairs[mid - 1] + pairs[mid]) / 2


def parse_tu(text):
    m = re.match(r"^([A-Za-z0-9_.+-]+)=(.+):([0-9.]+)$", text)
    if not m:
        raise argparse.ArgumentTypeError(f"expected NAME=PATH:BUDGET, got {text!r}")
    return m.group(1), m.group(2), float(m.group(3))


def parse_umbrella(text):
    header, _, budget = text.rpartition(":")
    try:
        return header, float(budget)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected HEADER:BUDGET, got {text!r}")


def compiler_version(compiler):
    try:
        p = subprocess.run([compiler, "--version"], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, universal_newlines=True)
        return p.stdout.splitlines()[0] if p.stdout else compiler
    except OSError:
        return compiler


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="The definition of the check is in this script's docstring (pydoc).")
    src = ap.add_argument_group("compiler and flags")
    src.add_argument("--compile-commands", metavar="FILE",
                     help="CMake's compile_commands.json: each TU is compiled with its own command")
    src.add_argument("--umbrella-flags-from", metavar="SOURCE",
                     help="the compile_commands.json entry whose flags the umbrella TU uses "
                          "(default: the first --tu's)")
    src.add_argument("--cxx", help="the compiler, when there is no compile_commands.json")
    src.add_argument("--cxxflags", default="",
                     help="its flags, one shell-quoted string: --cxxflags='-O3 -DNDEBUG' "
                          "(or the flags after a lone --)")
    src.add_argument("--include", "-I", action="append", default=[], metavar="DIR",
                     help="an include directory, searched before the command's own")
    src.add_argument("--define", "-D", action="append", default=[], metavar="NAME[=VALUE]",
                     help="a macro definition, added to every command")
    src.add_argument("--flag", action="append", default=[], metavar="FLAG",
                     help="an extra compile flag (no link flags), added to every command; "
                          "--flag=-fno-exceptions for one that starts with '-'")
    tus = ap.add_argument_group("what is measured")
    tus.add_argument("--umbrella", type=parse_umbrella, default=("xquant/xquant.hpp", 1.5),
                     metavar="HEADER:BUDGET",
                     help="the umbrella header and its budget (default xquant/xquant.hpp:1.5)")
    tus.add_argument("--no-umbrella", action="store_true", help="do not measure the umbrella")
    tus.add_argument("--tu", type=parse_tu, action="append", default=[], metavar="NAME=PATH:BUDGET",
                     help="a TU measured against its deps-only TU + one xtensor expression")
    tus.add_argument("--internal", action="append", default=[], metavar="DIR",
                     help="headers under DIR count as part of the TU, not as dependencies")
    ap.add_argument("--repeat", type=int, default=3, metavar="N",
                    help="compile each TU and its reference N times, in pairs (default 3)")
    ap.add_argument("--confirm", type=int, default=None, metavar="K",
                    help="a TU over its budget after the N runs is measured up to K more times, "
                         "stopping once within it (default: N)")
    ap.add_argument("--report-only", action="store_true",
                    default=os.environ.get("XQ_COMPILE_BUDGET_REPORT_ONLY", "") not in ("", "0", "OFF", "off"),
                    help="print the figures, never fail on a budget "
                         "(also: environment XQ_COMPILE_BUDGET_REPORT_ONLY=1)")
    ap.add_argument("--work-dir", metavar="DIR",
                    help="where the generated TUs and objects go (kept); default: a temporary directory")
    ap.add_argument("--verbose", "-v", action="store_true",
                    help="print the commands and the generated deps-only TUs")
    argv = sys.argv[1:] if argv is None else list(argv)
    tail = []
    if "--" in argv:     # compile_budget.py --cxx c++ [options] -- -O3 -I...
        tail = argv[argv.index("--") + 1:]
        argv = argv[:argv.index("--")]
    args = ap.parse_args(argv)

    if args.repeat < 1:
        ap.error("--repeat must be at least 1")
    if not args.compile_commands and not args.cxx:
        ap.error("give --compile-commands FILE or --cxx COMPILER [-- FLAGS...]")
    if tail and args.compile_commands:
        ap.error("flags after -- go with --cxx; with --compile-commands, use --flag")
    if args.no_umbrella and not args.tu:
        ap.error("nothing to measure")

    work = args.work_dir or tempfile.mkdtemp(prefix="xq_compile_budget_")
    os.makedirs(work, exist_ok=True)
    commands = None
    def command_for(source):
        if commands is None:
            return args.cxx, shlex.split(args.cxxflags) + tail, os.getcwd()
        found = commands.find(source)
        if found is None:
            raise Error(f"{source} is not in {commands.path} (is its target part of the build?)")
        return found

    def finish(compiler, flags):
        return compiler, ([f"-I{d}" for d in args.include] + flags +
                          [f"-D{d}" for d in args.define] + args.flag)

    try:
        if args.compile_commands:
            commands = CompileCommands(args.compile_commands)
        measured = []
        for name, path, budget in args.tu:
            if not os.path.isfile(path):
                raise Error(f"--tu {name}: {path} does not exist")
            t = Tu(name, path, budget, EXPRESSION_MAIN)
            compiler, flags, t.cwd = command_for(t.source)
            t.compiler, t.flags = finish(compiler, flags)
            measured.append(t)
        if not args.no_umbrella:
            header, budget = args.umbrella
            umbrella_src = os.path.join(work, "umbrella.cpp")
            with open(umbrella_src, "w") as f:
                f.write(f"// generated by tools/compile_budget.py\n#include <{header}>\n{EMPTY_MAIN}")
            t = Tu("umbrella", umbrella_src, budget, EMPTY_MAIN)
            found = None
            if commands is None:
                found = command_for(umbrella_src)
            elif args.umbrella_flags_from:
                found = commands.find(args.umbrella_flags_from)
                if found is None:
                    print(f"compile_budget: warning: {args.umbrella_flags_from} is not in "
                          f"{commands.path}; the umbrella takes the first --tu's flags", file=sys.stderr)
            if found is not None:
                compiler, flags, t.cwd = found
                t.compiler, t.flags = finish(compiler, flags)
            elif measured:
                t.compiler, t.flags, t.cwd = measured[0].compiler, measured[0].flags, measured[0].cwd
            else:
                raise Error("the umbrella takes its flags from --umbrella-flags-from or the first --tu")
            measured.insert(0, t)

        # The deps-only references.
        for t in measured:
            t.deps = direct_dependencies(t.compiler, t.flags, t.source, t.cwd, args.internal)
            t.reference = os.path.join(work, f"{t.name}_deps.cpp")
            with open(t.reference, "w") as f:
                f.write(f"// generated by tools/compile_budget.py: the dependencies of {t.source}\n")
                f.write("".join(f"#include {h}\n" for h in t.deps))
                if t.reference_main is EXPRESSION_MAIN and "<xtensor/xarray.hpp>" not in t.deps:
                    f.write("#include <xtensor/xarray.hpp>\n")
                f.write(t.reference_main)
            if args.verbose:
                print(f"--- {t.reference} ({len(t.deps)} headers)")
                with open(t.reference) as f:
                    print(f.read(), end="")

        def compile_seconds(t, source, tag):
            cmd = [t.compiler, *t.flags, "-c", source, "-o", os.path.join(work, f"{t.name}_{tag}.o")]
            if args.verbose:
                print("+ (cd %s && %s)" % (t.cwd, " ".join(shlex.quote(c) for c in cmd)), flush=True)
            seconds, p = run(cmd, t.cwd)
            if p.returncode != 0:
                raise Error(f"{source} does not compile:\n{p.stderr[-4000:]}")
            return seconds

        def measure(t):
            t.samples.append(compile_seconds(t, t.source, "tu"))
            t.reference_samples.append(compile_seconds(t, t.reference, "deps"))
            t.seconds, t.reference_seconds = min(t.samples), min(t.reference_samples)

        for _ in range(args.repeat):
            for t in measured:
                measure(t)
        # Confirmation: a TU over its budget gets more pairs, so that a few pairs a burst hit
        # on one side do not decide; a TU really over its budget stays over, however many.
        confirm = args.repeat if args.confirm is None else args.confirm
        for t in measured:
            for _ in range(confirm):
                if t.ratio() <= t.budget:
                    break
                measure(t)
    except Error as e:
        print(f"compile_budget: error: {e}", file=sys.stderr)
        return 2

    first = measured[0]
    print(f"compile_budget: {compiler_version(first.compiler)}; {cpu_model()}; "
          f"CPU seconds (user+sys), {args.repeat} paired runs (more for a TU over its budget); "
          f"ratio: the median of the pairs' ratios; seconds: the minima")
    print(f"compile_budget: flags: {' '.join(shlex.quote(f) for f in first.flags)}")
    print(f"compile_budget: generated TUs in {work}")
    width = max(len(t.name) for t in measured)
    over = 0
    for t in measured:
        ratio = t.ratio()
        ok = ratio <= t.budget
        over += not ok
        main_kind = "empty main" if t.reference_main is EMPTY_MAIN else "xtensor expression"
        print(f"{t.name:<{width}}  {t.seconds:7.2f} s  reference {t.reference_seconds:6.2f} s  "
              f"ratio {ratio:5.2f}  budget {t.budget:4.2f}  {'PASS' if ok else 'FAIL'}  "
              f"(reference: {len(t.deps)} dependency headers, {main_kind})")
        print(f"{'':<{width}}  runs: {' '.join(f'{x:.2f}' for x in t.samples)}; "
              f"reference {' '.join(f'{x:.2f}' for x in t.reference_samples)}; "
              f"ratio of the minima {t.ratio_of_minima():.2f}")
    if over:
        print(f"compile_budget: {over} of {len(measured)} over budget"
              + (" (--report-only: not failing)" if args.report_only else ""))
    else:
        print(f"compile_budget: all {len(measured)} within budget")
    return 1 if over and not args.report_only else 0


if __name__ == "__main__":
    sys.exit(main())
