#!/usr/bin/env python3
"""Checks `proximity-bench generate` and the robot flags as a user runs them: bad input (a missing URDF,
an unknown package, a malformed --package, a robot with no movable joint, --count 0, an output folder
that cannot be written or is not empty, flags a suite does not take, problems that do not fit the robot)
exits with code 2 and a message naming it, and leaves no file behind; the same seed writes the same
bytes and another seed other bytes; every file reads with an independent YAML reader (PyYAML) and has the
MotionBenchMaker fields. Robots: Debian dart-doc's KR5 and WAM (with the project's WAM SRDF, which
allows the two link pairs whose meshes always overlap).

Usage: check_generate.py BINARY DART_URDF_DIR WAM_SRDF. Exits 77 when the dart-doc robots are absent."""
import json
import math
import os
import subprocess
import sys
import tempfile

import yaml


def run(binary, *args):
    return subprocess.run([binary, *args], capture_output=True, text=True)


def tree(root):
    """Every file under root by relative path, with its bytes."""
    files = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            with open(path, "rb") as f:
                files[os.path.relpath(path, root)] = f.read()
    return files


def check_errors(binary, kr5, wam, wam_package, wam_srdf, scratch, failures):
    fixed = os.path.join(scratch, "fixed.urdf")
    with open(fixed, "w") as f:
        f.write('<robot name="statue"><link name="a"><collision><geometry><box size="1 1 1"/></geometry>'
                '</collision></link><link name="b"/><joint name="j" type="fixed"><parent link="a"/>'
                '<child link="b"/></joint></robot>')
    a_file = os.path.join(scratch, "a_file")
    with open(a_file, "w") as f:
        f.write("x")
    busy = os.path.join(scratch, "busy")
    os.makedirs(os.path.join(busy, "inside"))
    out = os.path.join(scratch, "out")
    # Problems for the WAM, which do not fit the KR5.
    wam_problems = os.path.join(scratch, "wam_problems")
    proc = run(binary, "generate", "--robot", wam, "--srdf", wam_srdf, "--package", wam_package, "--count", "1",
               "--seed", "3", "--out", wam_problems)
    if proc.returncode != 0:
        failures.append(f"generating WAM problems failed: {proc.stderr.strip()}")
    before = sorted(os.listdir(scratch))
    cases = [
        (["generate", "--robot", "/nonexistent/robot.urdf", "--out", out], "/nonexistent/robot.urdf: no such file"),
        (["generate", "--robot", wam, "--out", out], "herb_description"),
        (["generate", "--robot", wam, "--package", "herb_description", "--out", out], "expected NAME=DIR"),
        (["generate", "--robot", wam, "--package", "herb_description=/nonexistent", "--out", out], "/nonexistent"),
        (["generate", "--robot", fixed, "--out", out], "no movable joint"),
        (["generate", "--robot", wam, "--package", wam_package, "--out", out], "collides with itself"),
        (["generate", "--robot", wam, "--srdf", wam_srdf, "--package", wam_package, "--group", "leg", "--out", out],
         "no group 'leg'"),
        (["generate", "--robot", kr5, "--count", "0", "--out", out], "--count 0"),
        (["generate", "--robot", kr5, "--count", "-3", "--out", out], "--count -3"),
        (["generate", "--robot", kr5, "--count", "many", "--out", out], "--count"),
        (["generate", "--robot", kr5], "--out"),
        (["generate", "--out", out], "--robot"),
        (["generate", "--robot", kr5, "--group", "arm", "--out", out], "--srdf"),
        (["generate", "--robot", kr5, "--srdf", "/nonexistent.srdf", "--out", out], "/nonexistent.srdf"),
        (["generate", "--robot", kr5, "--out", "/proc/prox_check_generate"], "/proc/prox_check_generate"),
        (["generate", "--robot", kr5, "--out", os.path.join(a_file, "out")], os.path.join(a_file, "out")),
        (["generate", "--robot", kr5, "--out", busy], "not empty"),
        (["generate", "--robot", kr5, "--out", a_file], "not a folder"),
        (["robot", "--quick", "--robot", kr5], "--problems"),
        (["robot", "--quick", "--robot", kr5, "--problems", "/nonexistent/problems"], "/nonexistent/problems"),
        (["robot", "--quick", "--robot", kr5, "--problems", busy], "no MotionBenchMaker problems"),
        (["robot", "--quick", "--robot", kr5, "--problems", wam_problems], "does not fit robot"),
        (["robot", "--quick", "--robot", "/nonexistent/robot.urdf", "--problems", wam_problems], "no such file"),
        (["mbm", "--quick", "--srdf", "/x.srdf"], "--srdf needs --robot"),
        (["robot", "--quick", "--robot", kr5, "--problems", wam_problems, "--out", out], "--out applies to generate"),
        (["convex", "--quick", "--robot", kr5], "--robot applies to"),
    ]
    for args, needle in cases:
        proc = run(binary, *args)
        said = proc.stderr + proc.stdout
        if proc.returncode != 2:
            failures.append(f"{' '.join(args)}: exit code {proc.returncode}, expected 2 ({said.strip()[:300]})")
        elif needle not in said:
            failures.append(f"{' '.join(args)}: the message does not name '{needle}': {said.strip()[:300]}")
        else:
            print(f"exit 2 as expected: {' '.join(args)[:90]}\n    {said.strip().splitlines()[-1][:150]}")
        after = sorted(os.listdir(scratch))
        if after != before:
            failures.append(f"{' '.join(args)}: left {sorted(set(after) - set(before))} behind")
            before = after
    if sorted(os.listdir(busy)) != ["inside"]:
        failures.append("the non-empty --out folder was changed")


def check_files(root, failures):
    """Every file reads with PyYAML and has the fields a MotionBenchMaker reader needs."""
    summary = yaml.safe_load(open(os.path.join(root, "generator.yaml")))
    joints = summary["joints"]
    count = 0
    for folder in sorted(os.listdir(root)):
        if not os.path.isdir(os.path.join(root, folder)):
            continue
        for name in sorted(os.listdir(os.path.join(root, folder))):
            doc = yaml.safe_load(open(os.path.join(root, folder, name)))
            where = f"{folder}/{name}"
            if name.startswith("scene"):
                count += 1
                if doc["robot_model_name"] != summary["robot_model_name"]:
                    failures.append(f"{where}: robot_model_name {doc['robot_model_name']}")
                objects = doc["world"]["collision_objects"]
                if not objects:
                    failures.append(f"{where}: no objects")
                for o in objects:
                    (prim,), (pose,) = o["primitives"], o["primitive_poses"]
                    sizes = {"box": 3, "cylinder": 2, "sphere": 1}
                    if len(prim["dimensions"]) != sizes[prim["type"]] or min(prim["dimensions"]) <= 0:
                        failures.append(f"{where}: {o['id']}: dimensions {prim['dimensions']}")
                    if abs(math.sqrt(sum(v * v for v in pose["orientation"])) - 1) > 1e-5:
                        failures.append(f"{where}: {o['id']}: orientation {pose['orientation']}")
                    if len(pose["position"]) != 3:
                        failures.append(f"{where}: {o['id']}: position {pose['position']}")
            else:
                start = doc["start_state"]["joint_state"]
                if start["name"][:len(joints)] != joints or len(start["position"]) != len(start["name"]):
                    failures.append(f"{where}: start state {start}")
                goal = [c["joint_name"] for c in doc["goal_constraints"][0]["joint_constraints"]]
                if goal != joints:
                    failures.append(f"{where}: goal joints {goal}")
    if count != summary["count"]:
        failures.append(f"{count} scenes for count {summary['count']}")
    return summary


def main():
    binary, dart, wam_srdf = sys.argv[1], sys.argv[2], sys.argv[3]
    kr5 = os.path.join(dart, "KR5", "KR5 sixx R650.urdf")
    wam = os.path.join(dart, "wam", "wam.urdf")
    wam_package = "herb_description=" + os.path.join(dart, "wam")
    for path in (kr5, wam):
        if not os.path.exists(path):
            print(f"skipped: {path} is absent (Debian dart-doc); this check needs it")
            return 77
    failures = []
    help_text = run(binary, "--help").stdout
    for needle in ("--robot", "--srdf", "--package", "--group", "--problems", "--out", "--count",
                   "every movable joint"):
        if needle not in help_text:
            failures.append(f"--help does not mention '{needle}'")
    with tempfile.TemporaryDirectory(prefix="proximity-check-generate-") as scratch:
        errors = os.path.join(scratch, "errors")
        os.mkdir(errors)
        check_errors(binary, kr5, wam, wam_package, wam_srdf, errors, failures)
        runs = []
        for name, seed in (("a", "5"), ("b", "5"), ("c", "6")):
            out = os.path.join(scratch, name)
            proc = run(binary, "generate", "--robot", kr5, "--count", "4", "--seed", seed, "--out", out)
            if proc.returncode != 0:
                failures.append(f"generate --seed {seed}: exit code {proc.returncode}: {proc.stderr.strip()}")
                runs.append({})
                continue
            line = json.loads(proc.stdout)
            print(f"generated: {line}")
            if line["n"] != 4 or 2 * line["line_collides"] < line["n"]:
                failures.append(f"generate --seed {seed}: {line}")
            runs.append(tree(out))
        if not runs[0] or runs[0] != runs[1]:
            failures.append("the same seed wrote different files")
        if runs[0] == runs[2]:
            failures.append("another seed wrote the same files")
        if runs[0]:
            summary = check_files(os.path.join(scratch, "a"), failures)
            print(f"read back with PyYAML: {summary['count']} problems for {summary['robot_model_name']}, "
                  f"reach {summary['workspace']['reach']} m, {summary['straight_line_collides']} colliding lines")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
