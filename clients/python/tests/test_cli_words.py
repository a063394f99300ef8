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


def test_every_command_option_and_argument_is_explained() -> None:
    """Help texts: each command has a description, each option and positional a help of its own words (not
    just a default), and a hint that names a flag names the flag it belongs to."""
    import argparse
    import re

    from proximity_client.cli import build_parser

    def parsers(p: argparse.ArgumentParser, name: str):
        yield name, p
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                for sub, sp in a.choices.items():
                    yield from parsers(sp, f"{name} {sub}")

    problems = []
    for name, p in parsers(build_parser(), "proximity"):
        if not p.description:
            problems.append(f"{name}: no description")
        for a in p._actions:
            if isinstance(a, (argparse._HelpAction, argparse._VersionAction, argparse._SubParsersAction)):
                continue
            flag = a.option_strings[-1] if a.option_strings else a.metavar or a.dest
            text = (a.help or "").replace("%(default)s", "")
            if not re.search(r"[A-Za-z]{3}", re.sub(r"\(.*?\)", "", text)):
                problems.append(f"{name} {flag}: no help of its own ({a.help!r})")
            for named in re.findall(r"write (--[a-z-]+)=", text):
                if named not in a.option_strings:
                    problems.append(f"{name} {flag}: its hint names {named}")
    assert problems == [], "\n".join(problems)
