#!/usr/bin/env python3
"""Runs the README's "Bring your own robot" commands exactly as written: the first ```sh block of that
section (the quick start) and the second (an SRDF suggested for the same robot), in a fresh folder that holds `build` and `tests` (links to this build and the repository's
tests), so the relative paths resolve as from the repository root. The only changes are the daemon's
two ports, replaced by free ones (PROXIMITY_TARGET points the CLI at the first), so that the test runs
beside others. Fails when a command fails, when the README loses the section or the six commands, or
when the output does not name the robot, the scene and two valid paths (one to a joint goal, one to a
pose goal), or the suggested SRDF's scene and its disabled pairs.

Usage: readme_quickstart_test.py REPO BUILD"""
from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def quickstart_commands(readme: str) -> list:
    section = readme.split("## Bring your own robot", 1)
    assert len(section) == 2, "README.md has no '## Bring your own robot' section"
    blocks = re.findall(r"```sh\n(.*?)```", section[1].split("\n## ", 1)[0], re.S)
    assert len(blocks) >= 2, "the section should have two ```sh blocks (the quick start, the suggested SRDF)"
    quick, suggest = ([line for line in b.splitlines() if line.strip() and not line.startswith("#")]
                      for b in blocks[:2])
    assert len(quick) == 6, f"the quick start should be six commands, found {len(quick)}"
    assert any("--goal-pose" in c for c in quick), "the quick start has no pose-goal plan"
    assert any("srdf suggest" in c for c in suggest), "the second block does not suggest an SRDF"
    return quick + suggest


def main() -> int:
    repo, build = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
    if not Path("/usr/share/doc/dart/data/urdf/wam/wam.urdf").is_file():
        print("SKIP: Debian's dart-doc (the WAM) is not installed")
        return 0
    commands = quickstart_commands((repo / "README.md").read_text())
    port, metrics = free_port(), free_port()
    script = "\n".join(commands).replace("127.0.0.1:50051", f"127.0.0.1:{port}").replace(
        "127.0.0.1:9464", f"127.0.0.1:{metrics}")
    work = Path(tempfile.mkdtemp(prefix="quickstart-"))
    try:
        (work / "build").symlink_to(build)
        (work / "tests").symlink_to(repo / "tests")
        env = {k: v for k, v in os.environ.items() if not k.startswith("PROXIMITY_")}
        env["PROXIMITY_TARGET"] = f"127.0.0.1:{port}"
        env["PROXIMITY_WAIT"] = "30"
        # The daemon the first command starts in the background is stopped when the script ends.
        wrapped = "set -e\ntrap 'kill $(jobs -p) 2>/dev/null; wait' EXIT\n" + script + "\n"
        proc = subprocess.run(["bash", "-c", wrapped], cwd=work, env=env, capture_output=True, text=True, timeout=600)
        print(proc.stdout)
        print(proc.stderr, file=sys.stderr)
        assert proc.returncode == 0, f"the quick start failed with exit code {proc.returncode}"
        out = proc.stdout
        assert "(robot wam, 7 joints, name wam): created" in out, "scene create did not name the robot and scene"
        assert "solved" in out, "plan did not solve"
        assert "2 of 2 path(s) valid" in out, "validate did not report both paths valid"
        assert (work / "wam_pose_path.csv").is_file(), "the pose-goal plan wrote no path"
        assert "name wam-suggested): created" in out, "the suggested SRDF's scene was not created"
        assert "srdf (Never)" in out, "info did not list the pairs the suggested SRDF disables"
        written = work / "wam_path.csv"
        assert written.is_file() and written.read_text().startswith("/j1,"), "the path file is not the CSV expected"
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("README quick start: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
