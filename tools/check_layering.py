#!/usr/bin/env python3
"""The include layering of include/xquant: every header includes only downhill.

The top-level folders of include/xquant are *rooms*, each with a rank. A header may include
headers of its own room or of a room of LOWER rank, never one of its own rank or higher:

    rank 0  core        (and config.hpp at the root)
    rank 1  kernels
    rank 2  numerics
    rank 3  layers
    rank 4  quantizers
    rank 5  wrappers
    rank 6  transform
    rank 7  summary, train   (two rooms of one rank: neither includes the other)
    rank 8  io
    rank 9  deploy  (the ONNX model and its file format, under the exporter),
            distributed  (data parallelism over MPI: optional, not in the umbrella)
            xquant.hpp, the umbrella, may include anything and nothing includes it;
            src.hpp, the library of separate-compilation mode, includes the umbrella and
            every <room>/impl/*.ipp. A room's impl/ folder (the .ipp files of its headers)
            belongs to the room.

Subfolders belong to their room (train/detail is train). Checked: every `#include "..."`
in include/xquant/**/*.hpp and *.cuh, resolved as the compiler does (relative to the
including file, then to the include directory), and every `#include <xquant/...>`.
Comments are skipped. Each violation is reported as

    include/xquant/<file>:<line>: <room> (rank r) includes <room> (rank s): xquant/<header>

and so are an include that names a file that does not exist, a quoted include that leaves
include/xquant, and a header that is in no room (a new folder: give it a rank in ROOMS).
Exit status: 0 clean, 1 any violation, 2 usage error.

    python3 tools/check_layering.py                       # include/xquant of this repository
    python3 tools/check_layering.py path/to/include/xquant
"""

import argparse
import os
import re
import sys

ROOMS = {
    "core": 0,
    "kernels": 1,
    "numerics": 2,
    "layers": 3,
    "quantizers": 4,
    "wrappers": 5,
    "transform": 6,
    "summary": 7,
    "train": 7,
    "io": 8,
    "deploy": 9,
    "distributed": 9,
}
# Headers at the root of include/xquant: the room they belong to.
ROOT_FILES = {"config.hpp": "core", "fwd.hpp": "core", "numerics.hpp": "numerics", "io.hpp": "io"}
UMBRELLA = "xquant.hpp"
# The library of separate-compilation mode: includes every header and every .ipp.
LIBRARY = "src.hpp"
UMBRELLA_RANK = max(ROOMS.values()) + 1
EXTENSIONS = (".hpp", ".cuh", ".ipp")

INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*(?:"([^"\n]+)"|<(xquant/[^>\n]+)>)')


def blank_comments(text):
    """`text` with every comment replaced by spaces (newlines kept, so line numbers hold).
    String and character literals are skipped so that "/*" in one does not open a comment."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        nxt = text[i + 1] if i + 1 < n else ""
        if c == "/" and nxt == "/":
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c == "/" and nxt == "*":
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
            i = j
        elif c == '"' or (c == "'" and not (i > 0 and text[i - 1].isalnum())):
            # A literal, up to its unescaped closing quote or the end of the line. (A quote
            # after a digit or letter is a digit separator, 1'000, and is not a literal.)
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(text[i:j])
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def room_of(rel):
    """(room, rank) of a path relative to include/xquant, or None when it is in no room."""
    parts = rel.split("/")
    if len(parts) == 1:
        if parts[0] == UMBRELLA:
            return "umbrella", UMBRELLA_RANK
        if parts[0] == LIBRARY:
            return "library", UMBRELLA_RANK + 1
        room = ROOT_FILES.get(parts[0])
        return (room, ROOMS[room]) if room else None
    return (parts[0], ROOMS[parts[0]]) if parts[0] in ROOMS else None


def check(xquant_dir):
    xquant_dir = os.path.abspath(xquant_dir)
    include_dir = os.path.dirname(xquant_dir)            # what -I names
    repo = os.path.dirname(include_dir)                  # paths are printed relative to it
    problems = []
    headers = 0
    includes = 0
    for dirpath, dirnames, filenames in os.walk(xquant_dir):
        dirnames.sort()
        for name in sorted(filenames):
            if not name.endswith(EXTENSIONS):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, xquant_dir).replace(os.sep, "/")
            shown = os.path.relpath(path, repo)
            headers += 1
            mine = room_of(rel)
            if mine is None:
                problems.append(f"{shown}:1: in no room: give its folder a rank in ROOMS "
                                f"(tools/check_layering.py)")
                continue
            with open(path, encoding="utf-8", errors="replace") as f:
                text = blank_comments(f.read())
            for lineno, line in enumerate(text.split("\n"), 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                includes += 1
                quoted, angled = m.group(1), m.group(2)
                if quoted is not None:
                    spelled = f'"{quoted}"'
                    candidates = [os.path.join(dirpath, quoted), os.path.join(include_dir, quoted)]
                else:
                    spelled = f"<{angled}>"
                    candidates = [os.path.join(include_dir, angled)]
                target = next((os.path.normpath(c) for c in candidates if os.path.isfile(c)), None)
                if target is None:
                    problems.append(f"{shown}:{lineno}: includes {spelled}, which does not exist")
                    continue
                if not target.startswith(xquant_dir + os.sep):
                    problems.append(f"{shown}:{lineno}: includes {spelled}, which is outside "
                                    f"include/xquant ({os.path.relpath(target, repo)})")
                    continue
                target_rel = os.path.relpath(target, xquant_dir).replace(os.sep, "/")
                theirs = room_of(target_rel)
                if theirs is None:
                    problems.append(f"{shown}:{lineno}: includes xquant/{target_rel}, which is in no room")
                    continue
                room, rank = mine
                their_room, their_rank = theirs
                if room == "umbrella" or room == their_room or their_rank < rank:
                    continue
                problems.append(f"{shown}:{lineno}: {room} (rank {rank}) includes {their_room} "
                                f"(rank {their_rank}): xquant/{target_rel}")
    return headers, includes, problems


def main(argv=None):
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("xquant_dir", nargs="?",
                    default=os.path.join(os.path.dirname(here), "include", "xquant"),
                    help="the include/xquant folder to check (default: this repository's)")
    args = ap.parse_args(argv)
    if not os.path.isdir(args.xquant_dir):
        print(f"check_layering: error: {args.xquant_dir} is not a directory", file=sys.stderr)
        return 2
    headers, includes, problems = check(args.xquant_dir)
    for p in problems:
        print(p)
    print(f"check_layering: {headers} headers, {includes} xquant includes, "
          f"{len(problems)} violation{'s' if len(problems) != 1 else ''}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
