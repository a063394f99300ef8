#!/usr/bin/env python3
"""The core's public surface: every declaration its installed headers make, listed and counted.

Parses a translation unit that includes every header under core/include with clang's AST (clang++-16,
-ast-dump=json) and lists, per header, each declaration a consumer's compiler sees there: types
(classes, structs, enums, aliases), their members of any access (fields, methods, constructors,
enumerators), functions and variables at namespace scope, templates once each. Not counted: what the
compiler makes implicitly, parameters, what lives inside function bodies, forward declarations and
redeclarations of something already counted.

  scripts/public_surface.py                 # the list as Markdown on stdout
  scripts/public_surface.py --count         # the count alone
  scripts/public_surface.py --out docs/PUBLIC_SURFACE.md
  scripts/public_surface.py --check docs/PUBLIC_SURFACE.md   # exit 1 when the file is not what this makes
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INCLUDE = os.path.join("core", "include")

COUNTED = {
    "CXXRecordDecl", "EnumDecl", "EnumConstantDecl", "FieldDecl", "VarDecl", "FunctionDecl",
    "CXXMethodDecl", "CXXConstructorDecl", "CXXDestructorDecl", "CXXConversionDecl", "FunctionTemplateDecl",
    "ClassTemplateDecl", "TypeAliasDecl", "TypedefDecl", "TypeAliasTemplateDecl", "VarTemplateDecl",
}
# Children not to enter: bodies, parameters, a template's own pattern (the template is counted once).
SKIP_INNER = {"CompoundStmt", "ParmVarDecl", "TemplateTypeParmDecl", "NonTypeTemplateParmDecl"}
KIND_WORD = {
    "CXXRecordDecl": "type", "EnumDecl": "enum", "EnumConstantDecl": "enumerator", "FieldDecl": "field",
    "VarDecl": "variable", "FunctionDecl": "function", "CXXMethodDecl": "method",
    "CXXConstructorDecl": "constructor", "CXXDestructorDecl": "destructor", "CXXConversionDecl": "conversion",
    "FunctionTemplateDecl": "function template", "ClassTemplateDecl": "class template",
    "TypeAliasDecl": "alias", "TypedefDecl": "alias", "TypeAliasTemplateDecl": "alias template",
    "VarTemplateDecl": "variable template",
}


def headers():
    base = os.path.join(ROOT, INCLUDE)
    out = []
    for d, _, files in os.walk(base):
        out += [os.path.relpath(os.path.join(d, f), base) for f in files if f.endswith(".h")]
    return sorted(out)


def dump(hs, compiler):
    with tempfile.TemporaryDirectory() as tmp:
        tu = os.path.join(tmp, "all.cc")
        with open(tu, "w") as f:
            f.writelines(f'#include "{h}"\n' for h in hs)
        cmd = [compiler, "-std=c++20", "-fsyntax-only", "-I" + os.path.join(ROOT, INCLUDE), "-I/usr/include/eigen3",
               "-Xclang", "-ast-dump=json", "-Xclang", "-ast-dump-filter=proximity", tu]
        run = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        if run.returncode != 0:
            sys.exit(f"public_surface: {compiler} failed:\n{run.stderr[:4000]}")
        return run.stdout


def nodes(text):
    """The concatenated JSON objects clang prints, one per matching top-level declaration."""
    dec = json.JSONDecoder()
    i = 0
    while True:
        while i < len(text) and text[i] != "{":
            i += 1
        if i >= len(text):
            return
        obj, i = dec.raw_decode(text, i)
        yield obj


class Walker:
    def __init__(self):
        self.file = None
        self.seen = set()
        self.rows = {}  # header -> [(line, kind word, qualified name)]

    def track(self, loc):
        if not isinstance(loc, dict):
            return
        for key in ("spellingLoc", "expansionLoc"):
            self.track(loc.get(key))
        if "file" in loc:
            self.file = os.path.relpath(loc["file"], ROOT)

    def walk(self, n, scope):
        kind = n.get("kind", "")
        # Locations print only what changed since the last one: follow them in order.
        self.track(n.get("loc"))
        where_file, where_line = self.file, n.get("loc", {}).get("line")
        rng = n.get("range", {})
        self.track(rng.get("begin"))
        self.track(rng.get("end"))
        name = n.get("name", "")
        if kind in SKIP_INNER:
            self.skip(n)
            return
        inner_scope = scope
        if kind == "NamespaceDecl":
            inner_scope = scope + [name or "(anonymous)"]
        elif kind in COUNTED and not n.get("isImplicit"):
            fresh = not n.get("previousDecl") and n.get("id") not in self.seen
            is_record = kind in ("CXXRecordDecl", "EnumDecl")
            if is_record and not n.get("completeDefinition"):
                fresh = False  # a forward declaration
            if where_file and where_file.startswith(INCLUDE + "/") and fresh and name:
                self.seen.add(n.get("id"))
                qual = "::".join(scope + [name])
                self.rows.setdefault(os.path.relpath(where_file, INCLUDE), []).append(
                    (where_line or 0, KIND_WORD[kind], qual))
            inner_scope = scope + [name] if is_record or kind == "ClassTemplateDecl" else scope
            if kind in ("FunctionTemplateDecl", "VarTemplateDecl", "TypeAliasTemplateDecl"):
                self.skip(n)
                return
        for c in n.get("inner", []) or []:
            self.walk(c, inner_scope)

    def skip(self, n):
        """Follows the locations below n without counting anything there."""
        for c in n.get("inner", []) or []:
            self.track(c.get("loc"))
            rng = c.get("range", {})
            self.track(rng.get("begin"))
            self.track(rng.get("end"))
            self.skip(c)


def surface(compiler):
    hs = headers()
    w = Walker()
    for top in nodes(dump(hs, compiler)):
        w.walk(top, [])
    return hs, w.rows


def counts(rows, h=None):
    """(declarations other than data members, data members), of one header or of all."""
    items = rows.get(h, []) if h else [r for v in rows.values() for r in v]
    fields = sum(1 for _, kind, _ in items if kind == "field")
    return len(items) - fields, fields


def markdown(hs, rows):
    decls, fields = counts(rows)
    lines = ["# The core's public surface", "",
             "Generated by `scripts/public_surface.py --out docs/PUBLIC_SURFACE.md` (the ctest",
             "`architecture.public_surface` fails when this file differs from what the script makes): every",
             "declaration the installed headers (`core/include/proximity/core`) make, of any access, as a",
             "consumer's compiler sees it. Not counted: implicit members, parameters, function bodies,",
             "forward declarations and redeclarations. Declarations are types, functions, methods,",
             "constructors, enumerators, aliases, constants and templates; data members are counted apart.", "",
             f"**{decls} declarations and {fields} data members in {len(hs)} headers.**", "",
             "| header | declarations | data members |", "|---|---|---|"]
    lines += ["| {} | {} | {} |".format(h, *counts(rows, h)) for h in hs]
    for h in hs:
        lines += ["", f"## {h}", ""]
        lines += [f"- {kind} `{qual}`" for _, kind, qual in rows.get(h, [])]
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--count", action="store_true")
    ap.add_argument("--out")
    ap.add_argument("--check")
    ap.add_argument("--compiler", default="clang++-16")
    a = ap.parse_args()
    hs, rows = surface(a.compiler)
    text = markdown(hs, rows)
    if a.count:
        print("{} declarations, {} data members".format(*counts(rows)))
    elif a.out:
        with open(a.out, "w") as f:
            f.write(text)
    elif a.check:
        with open(a.check) as f:
            old = f.read()
        if old != text:
            sys.exit(f"{a.check} is not the surface the headers declare: run scripts/public_surface.py --out {a.check}")
        print("{}: up to date ({} declarations, {} data members)".format(a.check, *counts(rows)))
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
