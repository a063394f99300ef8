"""proximity-scene (tools/scene_cli.cc) as a user runs it: JSON out, clear errors with exit 2, and answers
that obey relations that hold for any correct checker (no daemon involved):

* a zero-length motion q -> q is free exactly when q is free;
* a certified-free motion has no colliding state among many samples along it;
* a motion whose end state collides is not free, and its t_collide state collides;
* the home state (all zeros) is free: the default scene is documented to be built that way.
"""
from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

import support


@pytest.fixture(scope="module")
def tool_info() -> dict:
    return support.run_scene_tool("info")


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(support.SCENE_TOOL), *args], capture_output=True, text=True, timeout=300)


def _limits(tool_info: dict) -> "tuple[np.ndarray, np.ndarray]":
    lo = np.array([x if x is not None else -np.pi for x in tool_info["lower"]])
    hi = np.array([x if x is not None else np.pi for x in tool_info["upper"]])
    return lo, hi


def test_info(tool_info: dict) -> None:
    assert tool_info["dof"] == len(tool_info["joint_names"]) == len(tool_info["lower"]) == 6
    assert all(lo < hi for lo, hi in zip(tool_info["lower"], tool_info["upper"]))
    assert tool_info["objects"] and tool_info["links"]


def test_home_is_free_and_header_rows_are_skipped(tool_info: dict, tmp_path: Path) -> None:
    f = tmp_path / "s.csv"
    f.write_text(",".join(tool_info["joint_names"]) + "\n# a comment\n\n" + ",".join(["0"] * 6) + "\n")
    out = support.run_scene_tool("states", str(f))
    assert out["dof"] == 6 and len(out["results"]) == 1 and out["results"][0]["free"]


def test_relations(tool_info: dict) -> None:
    lo, hi = _limits(tool_info)
    rng = np.random.default_rng(41)
    q = lo + rng.random((300, 6)) * (hi - lo)
    clear = [r["free"] for r in support.tool_states(q)]
    assert 0 < sum(clear) < len(clear)
    zero = support.tool_motions(q, q, "certified")
    assert [m["free"] for m in zero] == clear

    q0, q1 = q[:150], q[150:]
    link = support.tool_motions(q0, q1, "certified")
    end_free = clear[150:]
    start_free = clear[:150]
    for i, m in enumerate(link):
        if not (start_free[i] and end_free[i]):
            assert not m["free"]
    samples, owners = [], []
    for i, m in enumerate(link):
        if m["free"]:
            t = np.linspace(0, 1, 101)[:, None]
            samples.append(q0[i] + t * (q1[i] - q0[i]))
            owners.append(i)
        elif not m["undecided"]:
            samples.append((q0[i] + m["t_collide"] * (q1[i] - q0[i]))[None])
            owners.append(-1 - i)
    answers = support.tool_states(np.vstack(samples))
    k = 0
    for block, owner in zip(samples, owners):
        got = [a["free"] for a in answers[k:k + len(block)]]
        k += len(block)
        if owner >= 0:
            assert all(got), f"motion {owner}: certified free but a sample collides"
        else:
            assert not got[0], f"motion {-1 - owner}: the state at t_collide is free"


def test_errors_exit_2(tmp_path: Path) -> None:
    p = run("states", str(tmp_path / "missing.txt"))
    assert p.returncode == 2 and "missing.txt" in p.stderr
    bad = tmp_path / "bad.txt"
    bad.write_text("0 0 0 0 0\n")
    p = run("states", str(bad))
    assert p.returncode == 2 and "5 values, expected 6" in p.stderr
    p = run("motions", str(bad))
    assert p.returncode == 2 and "expected 12" in p.stderr
    nan = tmp_path / "nan.txt"
    nan.write_text("0 nan 0 0 0 0\n")
    p = run("states", str(nan))
    assert p.returncode == 2 and "error" in p.stderr
    p = run("motions", str(bad), "--mode", "sideways")
    assert p.returncode != 0
