#!/usr/bin/env python3
"""ARCHITECTURE.md's dependency arrows, checked against the code's include graph.

The document's "Allowed includes" block lists, for each module, the modules its sources and headers may
include. This test reads that block, resolves every `#include "..."` of the product's code (core,
planners, tools, server, clients/cpp) to the file it names, maps both ends to modules, and fails on an
arrow the block does not allow, naming the file and line. It also fails on a product file no module
claims, on a module the block names that no file belongs to, on a file outside core/ that includes one of
the core's private headers (core/src: not installed, so not the API), and (first) on a synthetic graph
with a known bad arrow, so that a checker that finds nothing cannot pass unnoticed.

Usage: architecture_test.py REPO_ROOT
"""
import os
import re
import sys

# Folders (relative to the repository) and the module each holds; the first match wins.
MODULE_FOLDERS = [
    ("core/src/base", "base"), ("core/include/proximity/core/base", "base"),
    ("core/src/mesh", "mesh"), ("core/include/proximity/core/mesh", "mesh"),
    ("core/src/narrowphase", "narrowphase"), ("core/include/proximity/core/narrowphase", "narrowphase"),
    ("core/src/bvh", "bvh"), ("core/include/proximity/core/bvh", "bvh"),
    ("core/src/robot", "robot"), ("core/include/proximity/core/robot", "robot"),
    ("core/src/scene", "scene"), ("core/include/proximity/core/scene", "scene"),
    ("core/src/contact", "contact"), ("core/include/proximity/core/contact", "contact"),
    ("planners/ompl", "planners_ompl"),
    ("planners", "planners"),
    ("tools/mbm", "mbm"),
    ("tools/default_scene", "default_scene"),
    ("tools/srdf_suggest", "srdf_suggest"),
    ("tools", "tools"),
    ("server", "server"),
    ("clients/cpp", "clients_cpp"),
    ("proto", "proto"),
]
# The folders whose code is checked (tests and benchmarks may use everything).
PRODUCT = ["core", "planners", "tools", "server", "clients/cpp"]
# Where quoted includes are looked up, after the including file's own folder.
INCLUDE_ROOTS = ["", "core/src", "core/include", "planners/include", "planners/ompl/include", "planners/src",
                 "tools/mbm/include", "tools/default_scene/include", "clients/cpp/include"]
# Generated or third-party includes, by prefix: the module they belong to (None: not ours).
PREFIXES = [("proximity/v1/", "proto"), ("grpc/", None)]

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def module_of(path):
    for folder, module in MODULE_FOLDERS:
        if path == folder or path.startswith(folder + "/") or path.startswith(folder + "."):
            return module
    return None


def resolve(root, including, name):
    """The module of the file `name` that `including` (relative path) includes, or None if not ours."""
    for base in [os.path.dirname(including)] + INCLUDE_ROOTS:
        candidate = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(os.path.join(root, candidate)):
            return module_of(candidate), candidate
    for prefix, module in PREFIXES:
        if name.startswith(prefix):
            return module, name
    raise LookupError(f'{including}: #include "{name}" names no file of the repository')


def read_allowed(architecture_md):
    """The "Allowed includes" block: {module: set of modules it may include}."""
    text = open(architecture_md, encoding="utf-8").read()
    m = re.search(r"<!-- allowed-includes: begin -->\s*```text\n(.*?)```\s*<!-- allowed-includes: end -->", text, re.S)
    if not m:
        raise LookupError("ARCHITECTURE.md has no allowed-includes block")
    allowed = {}
    for line in m.group(1).splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        module, _, uses = line.partition(":")
        allowed[module.strip()] = set(uses.split())
    return allowed


def violations(edges, allowed):
    """Arrows (module -> module, where) that `allowed` does not list, and modules it does not know."""
    out = []
    for (src, dst), where in sorted(edges.items()):
        if src not in allowed:
            out.append(f"{where[0]}: module '{src}' is not in ARCHITECTURE.md's allowed-includes block")
        elif dst not in allowed:
            out.append(f"{where[0]}: includes module '{dst}', which ARCHITECTURE.md's block does not name")
        elif dst not in allowed[src]:
            out.append(f"{where[0]}: {src} -> {dst} is not an arrow ARCHITECTURE.md allows "
                       f"({src} may include: {' '.join(sorted(allowed[src])) or 'nothing but itself'})")
    return out


def private_include(including, resolved):
    """Whether `including` (a product file outside core/) reaches a private core header (core/src)."""
    return not including.startswith("core/") and resolved.startswith("core/src/")


def include_graph(root):
    edges, modules, private = {}, set(), []
    for top in PRODUCT:
        for folder, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if not f.endswith((".h", ".cc")):
                    continue
                path = os.path.relpath(os.path.join(folder, f), root)
                src = module_of(path)
                if src is None:
                    raise LookupError(f"{path}: no module claims this file (architecture_test.py MODULE_FOLDERS)")
                modules.add(src)
                with open(os.path.join(root, path), encoding="utf-8", errors="replace") as fh:
                    for n, line in enumerate(fh, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        dst, resolved = resolve(root, path, m.group(1))
                        if private_include(path, resolved):
                            private.append(f"{path}:{n} (#include \"{m.group(1)}\") reaches the core's private "
                                           f"{resolved}: only core/include is installed")
                        if dst is not None and dst != src:
                            edges.setdefault((src, dst), []).append(f"{path}:{n} (#include \"{m.group(1)}\")")
    return edges, modules, private


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    allowed = read_allowed(os.path.join(root, "ARCHITECTURE.md"))
    # The checker itself: a known bad arrow is reported, a known good one is not.
    synthetic = {("tools", "server"): ["tools/x.cc:1"], ("server", "scene"): ["server/y.cc:1"]}
    found = violations(synthetic, {"tools": {"scene"}, "server": {"scene"}, "scene": set()})
    assert len(found) == 1 and "tools -> server" in found[0], found

    assert private_include("server/x.cc", "core/src/bvh/bvh.h") and not private_include("core/src/a.cc", "core/src/b.h")
    assert not private_include("server/x.cc", "core/include/proximity/core/scene/scene.h")

    edges, modules, private = include_graph(root)
    problems = violations(edges, allowed) + private
    for module in sorted(set(allowed) - modules - {"proto"}):
        problems.append(f"ARCHITECTURE.md's block names module '{module}', which no product file belongs to")
    print(f"{len(edges)} module arrows in the include graph of {', '.join(PRODUCT)}:")
    for (src, dst), where in sorted(edges.items()):
        print(f"  {src} -> {dst} ({len(where)} includes)")
    if problems:
        print("\nnot allowed by ARCHITECTURE.md:")
        for p in problems:
            print("  " + p)
        return 1
    print("every arrow is one ARCHITECTURE.md allows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
