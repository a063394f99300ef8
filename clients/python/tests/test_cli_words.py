"""CLI errors in the user's words against a real proximityd: the flag a value came from (not the request
field), the file a path came from, the robot and scene it was checked against, and what to run next."""
from __future__ import annotations

import json

import support


def test_errors_name_flags_files_and_the_robot(daemon: support.Daemon, info, tmp_path) -> None:
    short = support.run_cli(daemon, "poses", "--state=1,2")
    assert short.returncode == 2 and "--state: expected 6 values" in short.stderr, short.stderr
    assert "positions" not in short.stderr
    nan = support.run_cli(daemon, "contacts", "--state=nan,0,0,0,0,0")
    assert nan.returncode == 2 and "--state: joint" in nan.stderr, nan.stderr
    time_limit = support.run_cli(daemon, "plan", "--start=0,0,0,0,0,0", "--goal=0,0,0,0,0,0", "--time-limit=-1")
    assert time_limit.returncode == 2 and "--time-limit must be" in time_limit.stderr, time_limit.stderr
    wide = tmp_path / "wide.json"
    wide.write_text(json.dumps({"waypoints": [[0] * 5, [1] * 5]}))
    proc = support.run_cli(daemon, "validate", str(wide))
    assert proc.returncode == 2
    assert f"{wide}: rows have 5 values, robot {info.robot_name}" in proc.stderr and "paths[0]" not in proc.stderr
    named = tmp_path / "named.csv"
    named.write_text("a1,a2\n0,0\n")
    proc = support.run_cli(daemon, "check-states", str(named))
    assert proc.returncode == 2 and f"{named}: unknown joint(s) a1, a2; robot {info.robot_name}" in proc.stderr
    missing = support.run_cli(daemon, "poses", "--state=0,0,0,0,0,0", "--scene", "nope")
    assert missing.returncode == 2 and "proximity scene list" in missing.stderr and "CreateScene" not in \
        missing.stderr, missing.stderr
