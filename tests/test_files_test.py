#!/usr/bin/env python3
"""Every product source with behaviour of its own has a test file of its own.

A source file (.cc under core/src, planners, server, tools, clients/cpp) is covered by a test file named
after it (`<name>_test.cc` or `.py`, or `test_<name>.py`, anywhere under tests/ or clients/python/tests/)
or by one whose opening comment names it (`(<name>.cc)`: a test file of several sources says which).
Sources without behaviour of their own are exempt, each kind with its reason below. Fails naming every
source nothing covers, and (first) on a synthetic tree, so that a checker that finds nothing cannot pass.

Usage: test_files_test.py REPO_ROOT
"""
import os
import re
import sys

PRODUCT = ["core/src", "planners", "server", "tools", "clients/cpp"]
TEST_DIRS = ["tests", "clients/python/tests"]
# Sources whose behaviour lives elsewhere: a program's entry (its flags and exits are tested through the
# program), explicit template instantiations, and the per-instruction-set builds of one kernel.
EXEMPT = [
    (re.compile(r"(^|/)main\.cc$"), "a program's entry, tested by running the program"),
    (re.compile(r"_instances\.cc$"), "explicit template instantiations of a source tested under its name"),
    (re.compile(r"(^|/)lanes_(baseline|avx2|avx512)\.cc$"), "an instruction-set build of lanes_kernel.inc"),
]


def opening_comment(path):
    """The first lines of a test file that are not includes or imports: its opening comment or docstring."""
    with open(path, encoding="utf-8", errors="replace") as f:
        head = [next(f, "") for _ in range(12)]
    return " ".join(l.strip() for l in head if not re.match(r"\s*(#include|import |from )", l))


def covered(sources, tests):
    """The sources (relative paths) no test covers."""
    names = {}
    for t, comment in tests:
        base = os.path.basename(t)
        stem = re.sub(r"(_test)?\.(cc|py)$", "", re.sub(r"^test_", "", base))
        names.setdefault(stem, []).append(t)
        for m in re.finditer(r"([A-Za-z0-9_]+)\.cc\b", comment):
            names.setdefault(m.group(1), []).append(t)
    missing = []
    for src in sources:
        if any(p.search(src) for p, _ in EXEMPT):
            continue
        stem = os.path.basename(src)[:-3]
        if stem not in names:
            missing.append(src)
    return missing


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    # The checker itself: a named test and a test naming the source in its comment cover; nothing else does.
    assert covered(["server/a.cc", "server/b.cc", "server/c.cc", "server/main.cc"],
                   [("tests/a_test.cc", ""), ("tests/x_test.cc", "// The thing (b.cc) does")]) == ["server/c.cc"]
    sources = []
    for top in PRODUCT:
        for folder, _, files in os.walk(os.path.join(root, top)):
            sources += [os.path.relpath(os.path.join(folder, f), root) for f in files if f.endswith(".cc")]
    tests = []
    for top in TEST_DIRS:
        for folder, _, files in os.walk(os.path.join(root, top)):
            for f in files:
                if re.search(r"(_test\.(cc|py)|^test_.*\.py)$", f):
                    path = os.path.join(folder, f)
                    tests.append((os.path.relpath(path, root), opening_comment(path)))
    missing = covered(sorted(sources), tests)
    print(f"{len(sources)} product sources, {len(tests)} test files")
    if missing:
        print("sources without a test file of their own (name one `<source>_test`, or name the source as")
        print("`(<source>.cc)` in the opening comment of the test file that covers it):")
        for m in missing:
            print("  " + m)
        return 1
    print("every source with behaviour of its own has its test file")
    return 0


if __name__ == "__main__":
    sys.exit(main())
