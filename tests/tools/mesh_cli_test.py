#!/usr/bin/env python3
"""proximity-mesh as a user runs it: real files, JSON output checked against an independent brute-force
distance between the two meshes' vertices/triangles, and bad input giving a clear error and exit 2."""
import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path


def write_box_stl(path: Path, size: float) -> None:
    """An ASCII STL cube with edge `size`, centred at the origin."""
    h = size / 2
    corners = [(x, y, z) for x in (-h, h) for y in (-h, h) for z in (-h, h)]
    faces = [(0, 1, 3), (0, 3, 2), (4, 6, 7), (4, 7, 5), (0, 4, 5), (0, 5, 1),
             (2, 3, 7), (2, 7, 6), (0, 2, 6), (0, 6, 4), (1, 5, 7), (1, 7, 3)]
    lines = ["solid box"]
    for f in faces:
        lines.append(" facet normal 0 0 0\n  outer loop")
        for i in f:
            lines.append("   vertex %r %r %r" % corners[i])
        lines.append("  endloop\n endfacet")
    lines.append("endsolid box")
    path.write_text("\n".join(lines) + "\n")


def run(tool, *args):
    return subprocess.run([tool, *map(str, args)], capture_output=True, text=True)


def main() -> int:
    tool = sys.argv[1]
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        a, b = Path(tmp) / "a.stl", Path(tmp) / "b.stl"
        write_box_stl(a, 1.0)
        write_box_stl(b, 0.5)
        # Axis-aligned boxes: the distance between them is the gap between their faces, computed here
        # independently of the library. B sits at (x, 0, 0), rotated 0.
        for x, expect_collide in [(2.0, False), (0.76, False), (0.7, True), (0.0, False)]:
            proc = run(tool, a, b, "--pose-b", x, 0, 0, 0, 0, 0, "--json")
            if proc.returncode != 0:
                failures.append(f"x={x}: exit {proc.returncode}: {proc.stderr}")
                continue
            out = json.loads(proc.stdout)
            gap = max(0.0, abs(x) - 0.75)
            if x == 0.0:
                gap = 0.25  # B nested inside A: surfaces 0.25 apart, no contact
            if out["colliding"] != expect_collide:
                failures.append(f"x={x}: colliding {out['colliding']}, expected {expect_collide}")
            if not math.isclose(out["upper_bound"], gap, rel_tol=1e-9, abs_tol=1e-12):
                failures.append(f"x={x}: distance {out['upper_bound']}, expected {gap}")
            if out["lower_bound"] > out["upper_bound"]:
                failures.append(f"x={x}: lower bound above upper bound")
            pa, pb = out["p_WA"], out["p_WB"]
            if not math.isclose(math.dist(pa, pb), out["upper_bound"], abs_tol=1e-12):
                failures.append(f"x={x}: witness points are {math.dist(pa, pb)} apart, not {out['upper_bound']}")
            print(f"x={x}: colliding={out['colliding']} distance={out['upper_bound']:.6g} "
                  f"work={out['distance_bv_tests']} BV, {out['distance_triangle_tests']} triangles")
        # A relative budget brackets the truth.
        out = json.loads(run(tool, a, b, "--pose-b", 2.0, 0.3, 0.1, 0.2, 0.1, 0.4, "--rel-err", "0.5", "--json").stdout)
        exact = json.loads(run(tool, a, b, "--pose-b", 2.0, 0.3, 0.1, 0.2, 0.1, 0.4, "--json").stdout)
        if not (out["lower_bound"] <= exact["upper_bound"] <= out["upper_bound"] <= 1.5 * out["lower_bound"] + 1e-12):
            failures.append(f"budget: [{out['lower_bound']}, {out['upper_bound']}] vs exact {exact['upper_bound']}")
        # Bad input: a clear message naming the problem, exit code 2, no crash.
        missing = Path(tmp) / "missing.stl"
        proc = run(tool, a, missing)
        if proc.returncode != 2 or str(missing) not in proc.stderr:
            failures.append(f"missing file: exit {proc.returncode}, stderr {proc.stderr!r}")
        bad = Path(tmp) / "bad.obj"
        bad.write_text("v 0 0 0\nv nan 0 0\nv 0 1 0\nf 1 2 3\n")
        proc = run(tool, bad, a)
        if proc.returncode != 2 or "bad.obj" not in proc.stderr:
            failures.append(f"NaN vertex: exit {proc.returncode}, stderr {proc.stderr!r}")
        proc = run(tool, a, b, "--rel-err", "-1")
        if proc.returncode != 2 or "rel_err" not in proc.stderr:
            failures.append(f"negative rel_err: exit {proc.returncode}, stderr {proc.stderr!r}")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
