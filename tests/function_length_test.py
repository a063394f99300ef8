#!/usr/bin/env python3
"""No function of the product's C++ code (core, planners, tools, server, clients/cpp) is longer than
MAX_LINES lines, from the line of its opening brace to the line of its closing one.

A small scanner, not a compiler: it strips comments, string and character literals, tracks braces, and
takes a brace that opens at namespace or class scope right after a closing parenthesis (possibly
followed by const, noexcept, override, a trailing return type or a constructor's initialisers) as a
function body; lambdas and blocks inside a body count toward it. It first checks itself on synthetic
code with a known long function, a long class and a long namespace, so that a scanner that finds nothing
cannot pass unnoticed.

Usage: function_length_test.py REPO_ROOT
"""
import os
import re
import sys

MAX_LINES = 120
PRODUCT = ["core", "planners", "tools", "server", "clients/cpp"]
SUFFIXES = (".cc", ".h")


def strip(text):
    """The text with comments and string/character literals blanked (newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = text.find(")" + m.group(1) + '"', i)
            end = n if end < 0 else end + len(m.group(1)) + 2
            out.append('""' + "\n" * text.count("\n", i, end))
            i = end
        elif c in "\"'":
            if c == "'" and i > 0 and text[i - 1].isalnum():  # a digit separator (1'000)
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(text):
    """(first line, line count) of every function body at namespace or class scope."""
    code = strip(text)
    found = []
    # Per open brace: whether it opened a function body, and its line.
    stack = []
    line = 1
    for pos, c in enumerate(code):
        if c == "\n":
            line += 1
        elif c == "{":
            in_function = any(kind for kind, _ in stack)
            is_function = False
            if not in_function:
                head = code[max(0, pos - 400):pos]
                # After `)`, optionally qualifiers, a trailing return type or initialisers.
                head = re.sub(r"\s+", " ", head).rstrip()
                head = re.sub(r"( (const|noexcept|override|final|mutable))+$", "", head)
                head = re.sub(r" -> [\w:<>,\s*&]+$", "", head)
                # A constructor whose last initialiser is braced: `) : a_(x), b_{y} {`.
                ctor = head.endswith("}") and re.search(r"\)\s*:\s*[\w:]+\s*[({][^;]*$", head)
                is_function = (head.endswith(")") or bool(ctor)) and \
                    not re.search(r"\b(namespace|class|struct|enum|union)\b[^;{}()]*$", head)
                # A brace initialiser after `= ...(...)` is not a body.
                if is_function and re.search(r"=[^;{}]*\)$", head) and not re.search(r"\)\s*:", head):
                    is_function = False
            stack.append((is_function, line))
        elif c == "}" and stack:
            is_function, start = stack.pop()
            if is_function:
                found.append((start, line - start + 1))
    return found


def self_check():
    long_body = "\n".join(["  x += 1;"] * (MAX_LINES + 5))
    sample = (
        "namespace a {\n"
        "struct S {\n" + "\n".join(["  int f%d() const { return 1; }" % k for k in range(MAX_LINES + 5)]) + "\n};\n"
        "int Long(int x) {\n" + long_body + "\n  auto l = [&](int y) { return y; };\n  return l(x);\n}\n"
        "Foo::Foo(int v) : v_(v), w_{v} {\n  const char* s = \"{\";\n}\n"
        "}  // namespace a\n")
    lengths = [count for _, count in functions(sample)]
    assert max(lengths) == MAX_LINES + 9, lengths  # Long: its braces, body, lambda and return
    assert sorted(lengths)[:-1] == [1] * (MAX_LINES + 5) + [3], lengths  # the struct's one-liners, Foo


def main(root):
    self_check()
    problems = []
    checked = 0
    for top in PRODUCT:
        for folder, _, files in os.walk(os.path.join(root, top)):
            for name in files:
                if not name.endswith(SUFFIXES):
                    continue
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8") as f:
                    text = f.read()
                for start, count in functions(text):
                    checked += 1
                    if count > MAX_LINES:
                        problems.append(f"{os.path.relpath(path, root)}:{start}: a function of {count} lines "
                                        f"(at most {MAX_LINES})")
    print(f"{checked} functions checked")
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")))
