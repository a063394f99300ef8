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


def test_group_rows_hold_the_groups_joints(tool_info: dict, tmp_path: Path) -> None:
    """--srdf and --group: a row of the group's joints answers as the full row with the other joints at the
    robot's default configuration (0 within the limits, else the middle); info lists the group and the
    SRDF's disabled pair with its reason."""
    names = tool_info["joint_names"]
    links = tool_info["links"]
    srdf = tmp_path / "r.srdf"
    srdf.write_text(f'<robot name="r"><group name="wrist"><joint name="{names[3]}"/><joint name="{names[5]}"/></group>'
                    f'<disable_collisions link1="{links[1]}" link2="{links[3]}" reason="Never"/></robot>')
    info = support.run_scene_tool("--srdf", str(srdf), "info")
    assert info["groups"] == {"wrist": [names[3], names[5]]}
    assert [links[1], links[3], "srdf", "Never"] in info["allowed_pairs"]
    assert [links[0], links[1], "adjacent", ""] in info["allowed_pairs"]
    lo, hi = _limits(tool_info)
    base = np.where((lo <= 0) & (0 <= hi), 0.0, 0.5 * (lo + hi))
    rng = np.random.default_rng(4)
    part = rng.uniform(lo[[3, 5]], hi[[3, 5]], (40, 2))
    whole = np.tile(base, (40, 1))
    whole[:, [3, 5]] = part
    f_part, f_whole = tmp_path / "part.txt", tmp_path / "whole.txt"
    np.savetxt(f_part, part)
    np.savetxt(f_whole, whole)
    by_group = support.run_scene_tool("--srdf", str(srdf), "states", str(f_part), "--group", "wrist")
    by_row = support.run_scene_tool("--srdf", str(srdf), "states", str(f_whole))
    assert by_group["dof"] == 2 and by_group["results"] == by_row["results"]
    m_part, m_whole = tmp_path / "mpart.txt", tmp_path / "mwhole.txt"
    np.savetxt(m_part, np.hstack([part[:20], part[20:]]))
    np.savetxt(m_whole, np.hstack([whole[:20], whole[20:]]))
    by_group = support.run_scene_tool("--srdf", str(srdf), "motions", str(m_part), "--group", "wrist")
    by_row = support.run_scene_tool("--srdf", str(srdf), "motions", str(m_whole))
    assert by_group["results"] == by_row["results"]
    p = run("--srdf", str(srdf), "states", str(f_part), "--group", "legs")
    assert p.returncode == 2 and "'legs'" in p.stderr, p.stderr
    p = run("states", str(f_part), "--group", "wrist")  # no SRDF, no groups
    assert p.returncode == 2 and "'wrist'" in p.stderr, p.stderr
