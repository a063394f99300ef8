"""scripts/ros-bridge.sh as a ROS user runs it: it starts what is missing, prints `ready` once the
services are advertised, answers `rosservice call`, and on SIGTERM or SIGINT stops every process it
started (found here through /proc, not through the script's own account) and nothing else."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Dict, List, Set

import pytest
import yaml

import rosenv
from rosenv import KR5_JOINTS, KR5_URDF

rosenv.need_kr5()

SCRIPT = rosenv.REPO / "scripts" / "ros-bridge.sh"


def _children(pid: int) -> Set[int]:
    """Every live descendant of ``pid``."""
    kids: Dict[int, List[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            kids.setdefault(ppid, []).append(int(d.name))
    out: Set[int] = set()
    todo = [pid]
    while todo:
        for c in kids.get(todo.pop(), []):
            if c not in out:
                out.add(c)
                todo.append(c)
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


class Script:
    def __init__(self, env: Dict[str, str], *args: str) -> None:
        self.proc = subprocess.Popen([str(SCRIPT), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                     preexec_fn=rosenv._die_with_parent)
        self.out: List[str] = []
        self.err: List[str] = []
        for stream, sink in ((self.proc.stdout, self.out), (self.proc.stderr, self.err)):
            threading.Thread(target=lambda s=stream, k=sink: [k.append(l.decode(errors="replace").rstrip()) for l in s],
                             daemon=True).start()

    def wait_ready(self, timeout: float = 180.0) -> None:
        ok = rosenv.eventually(lambda: "ready" in self.out or self.proc.poll() is not None, timeout, 0.1)
        assert ok and "ready" in self.out, f"no 'ready' (exit {self.proc.poll()}):\n" + "\n".join(self.err[-40:])


def _call_validity(env: Dict[str, str], q: List[float]) -> dict:
    names = ", ".join(KR5_JOINTS)
    values = ", ".join(repr(float(v)) for v in q)
    out = subprocess.run(["rosservice", "call", "/proximity_bridge/check_state_validity",
                          f"{{robot_state: {{joint_state: {{name: [{names}], position: [{values}]}}}}}}"],
                         capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    return yaml.safe_load(out.stdout)


def _env(master_uri: str) -> Dict[str, str]:
    env = dict(os.environ)
    env.update({"ROS_MASTER_URI": master_uri, "ROS_HOSTNAME": "127.0.0.1", "PYTHONPATH": str(rosenv.MSGS),
                "PROXIMITY_ROS_MSGS_DIR": str(rosenv.MSGS), "PROXIMITYD": str(rosenv.support.DAEMON),
                "PROXIMITY_STUBS_DIR": str(rosenv.support.STUBS)})
    env.pop("ROS_IP", None)
    return env


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_the_script_starts_a_master_proximityd_and_the_node_and_stops_them(tmp_path: Path, sig: int) -> None:
    env = _env(f"http://127.0.0.1:{rosenv.free_port()}")
    env["ROS_HOME"] = str(tmp_path)
    s = Script(env)
    try:
        s.wait_ready()
        started = _children(s.proc.pid)
        commands = " | ".join(_cmdline(p) for p in started)
        assert "rosmaster" in commands and "proximityd" in commands and "proximity_ros.node" in commands
        home = _call_validity(env, [0.0] * 6)
        hit = _call_validity(env, [0.0, 1.5, 0.0, 0.0, 0.0, 0.0])
        assert home["valid"] is True and hit["valid"] is False
        assert hit["contacts"][0]["contact_body_2"] == "table"
        s.proc.send_signal(sig)
        assert s.proc.wait(timeout=60) == 0
        assert rosenv.eventually(lambda: not any(_alive(p) for p in started), 30), \
            [(p, _cmdline(p)) for p in started if _alive(p)]
    finally:
        if s.proc.poll() is None:
            s.proc.kill()


def test_a_robot_from_files_on_a_running_master(tmp_path: Path, master: rosenv.RosMaster) -> None:
    """--urdf, --srdf and --package with a master already running: the script leaves the master alone."""
    pkg = tmp_path / "renamed_folder"
    shutil.copytree(KR5_URDF.parent / "meshes", pkg / "meshes")
    urdf = tmp_path / "kr5.urdf"
    urdf.write_text(KR5_URDF.read_text().replace('filename="meshes/', 'filename="package://kr5_description/meshes/'))
    srdf = tmp_path / "kr5.srdf"
    srdf.write_text('<robot name="KR5sixxR650WP_description"><group name="manipulator">'
                    '<chain base_link="base_link" tip_link="palm"/></group></robot>')
    env = _env(master.uri)
    s = Script(env, "--urdf", str(urdf), "--srdf", str(srdf), "--package", f"kr5_description={pkg}")
    try:
        s.wait_ready()
        started = _children(s.proc.pid)
        assert not any("rosmaster" in _cmdline(p) for p in started)
        r = _call_validity(env, [0.0] * 6)
        with rosenv.Daemon() as d:
            c = d.client()
            info = c.create_scene_from_files(str(urdf), str(srdf), package_dirs={"kr5_description": str(pkg)})
            assert r["scene_id"] == info.scene_id
        s.proc.send_signal(signal.SIGTERM)
        assert s.proc.wait(timeout=60) == 0
        assert rosenv.eventually(lambda: not any(_alive(p) for p in started), 30)
        # The master the script did not start still answers.
        import xmlrpc.client
        assert xmlrpc.client.ServerProxy(master.uri).getPid("/t")[0] == 1
    finally:
        if s.proc.poll() is None:
            s.proc.kill()


def test_bad_arguments(tmp_path: Path) -> None:
    env = _env("http://127.0.0.1:1")
    for args, message in ((["--srdf", "x.srdf"], "--srdf needs --urdf"), (["--urdf", str(tmp_path / "no.urdf")], "no file"),
                          (["--package", "nodir"], "NAME=DIR"), (["--bogus"], "unknown argument")):
        p = subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=30)
        assert p.returncode == 2 and message in p.stderr, (args, p.stderr)
