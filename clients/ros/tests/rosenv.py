"""Test support for the ROS bridge: a real ROS master on a free loopback port, real proximityd
processes (clients/python/tests/support.Daemon), the real proximity_bridge node as a process, and a
rospy client node in the test process.

Where things are found (ctest sets them; by hand PROXIMITY_BUILD_DIR is enough):

* ``PROXIMITYD``, ``PROXIMITY_STUBS_DIR``: as in clients/python/tests/support.py.
* ``PROXIMITY_ROS_MSGS_DIR``: the generated proximity_msgs, else ``$PROXIMITY_BUILD_DIR/clients/ros/gen``,
  else generated now into a temporary folder with clients/ros/generate_msgs.py.
"""
from __future__ import annotations

import collections
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Deque, Dict, List, Optional, Sequence

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
ROS_SRC = REPO / "clients" / "ros" / "src"
PY_TESTS = REPO / "clients" / "python" / "tests"
sys.path[:0] = [str(PY_TESTS)]
import support  # noqa: E402  (clients/python/tests: Daemon, free_port, eventually, the build's paths)

from support import Daemon, eventually, free_port  # noqa: E402,F401


def _msgs_dir() -> Path:
    given = os.environ.get("PROXIMITY_ROS_MSGS_DIR")
    if given:
        return Path(given)
    built = support.BUILD / "clients" / "ros" / "gen"
    if (built / "proximity_msgs" / "srv" / "__init__.py").is_file():
        return built
    out = Path(tempfile.mkdtemp(prefix="proximity_msgs_"))
    subprocess.run(["/usr/bin/python3", str(REPO / "clients" / "ros" / "generate_msgs.py"), "--out", str(out)],
                   check=True, capture_output=True)
    return out


MSGS = _msgs_dir()
for p in (str(ROS_SRC), str(support.PY_SRC), str(MSGS), str(support.STUBS)):
    if p not in sys.path:
        sys.path.append(p)
#: PYTHONPATH of the node processes.
NODE_PYTHONPATH = os.pathsep.join([str(ROS_SRC), str(support.PY_SRC), str(MSGS), str(support.STUBS)])
KR5_URDF = Path(support.KR5_URDF)
#: The built-in scene's joints (server/default_scene.cc, the KR5's URDF order).
KR5_JOINTS = ["shoulder_yaw", "shoulder_pitch", "elbow_pitch", "elbow_roll", "wrist_pitch", "wrist_roll"]


def need_kr5() -> None:
    """Skips the calling test module when Debian's dart-doc KR5 (the built-in scene's robot) is absent."""
    import pytest
    if not KR5_URDF.is_file():
        pytest.skip(f"{KR5_URDF} is absent (apt-get install dart-doc): proximityd has no built-in scene",
                    allow_module_level=True)


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when the test process dies (a killed run leaves nothing behind)."""
    import ctypes
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


class _Process:
    """A child process in its own process group, its output collected by a thread."""

    def __init__(self, name: str, args: Sequence[str], env: Dict[str, str], cwd: Optional[str] = None) -> None:
        self.name = name
        self.lines: Deque[str] = collections.deque(maxlen=4000)
        self.proc = subprocess.Popen(list(args), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, env=env, cwd=cwd, start_new_session=True,
                                     preexec_fn=_die_with_parent)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            self.lines.append(raw.decode(errors="replace").rstrip("\n"))

    def output(self) -> str:
        return "\n".join(self.lines)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, sig: int = signal.SIGINT, timeout: float = 15.0) -> Optional[int]:
        """Signals the process group, waits, then kills what is left."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # children the leader left behind
        except ProcessLookupError:
            pass
        if self.proc.poll() is None:
            self.proc.wait(timeout=5)
        return self.proc.returncode


class RosMaster:
    """``roscore`` on a free loopback port, with its logs and ROS_HOME in a temporary folder."""

    def __init__(self) -> None:
        self.home = Path(tempfile.mkdtemp(prefix="ros_home_"))
        self.port = 0
        self.proc: Optional[_Process] = None

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self, **extra: str) -> Dict[str, str]:
        env = dict(os.environ)
        env.update({"ROS_MASTER_URI": self.uri, "ROS_HOSTNAME": "127.0.0.1", "ROS_HOME": str(self.home),
                    "ROS_LOG_DIR": str(self.home / "log"), "PYTHONDONTWRITEBYTECODE": "1"})
        env.pop("ROS_IP", None)
        env.update(extra)
        return env

    def start(self, timeout: float = 30.0) -> "RosMaster":
        import xmlrpc.client
        for _attempt in range(3):
            self.port = free_port()
            self.proc = _Process("roscore", ["roscore", "-p", str(self.port)], self.env())
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and self.proc.alive():
                try:
                    code, _, _ = xmlrpc.client.ServerProxy(self.uri).getPid("/test")
                    if code == 1:
                        return self
                except OSError:
                    pass
                time.sleep(0.1)
            out = self.proc.output()
            self.proc.stop()
        raise RuntimeError(f"roscore did not start:\n{out}")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.stop(signal.SIGINT)


class BridgeProcess(_Process):
    """The proximity_bridge node as a ROS user runs it (``python3 -m proximity_ros.node``)."""

    def __init__(self, master: RosMaster, name: str = "proximity_bridge", target: str = "",
                 params: Optional[Dict[str, Any]] = None, env: Optional[Dict[str, str]] = None,
                 cwd: Optional[str] = None) -> None:
        self.node_name = name
        args = ["/usr/bin/python3", "-m", "proximity_ros.node", f"__name:={name}"]
        if target:
            args.append(f"_target:={target}")
        for k, v in (params or {}).items():
            args.append(f"_{k}:={v}")
        e = master.env(PYTHONPATH=NODE_PYTHONPATH, **(env or {}))
        super().__init__(name, args, e, cwd)

    def service(self, name: str) -> str:
        return f"/{self.node_name}/{name}"

    def wait_ready(self, timeout: float = 60.0) -> "BridgeProcess":
        """Waits until every service of the node is advertised."""
        import rosservice
        want = {self.service(s) for s in ("check_state_validity", "check_states", "check_trajectory", "plan")}
        ok = eventually(lambda: not self.alive() or want <= set(rosservice.get_service_list()), timeout, 0.1)
        if not ok or not self.alive():
            raise RuntimeError(f"{self.node_name} did not advertise its services:\n{self.output()}")
        return self


def init_client_node(master: RosMaster) -> None:
    """rospy in this process, as a client node of ``master`` (once per process)."""
    os.environ.update({k: v for k, v in master.env().items() if k.startswith("ROS_")})
    import rospy
    rospy.init_node("bridge_test_client", anonymous=True, disable_signals=True)


def proxies(node: BridgeProcess) -> Dict[str, Any]:
    """Persistent rospy service proxies of the node's four services."""
    import rospy
    from proximity_msgs.srv import CheckTrajectory, GetStateValidity, GetStatesValidity, Plan
    return {
        "validity": rospy.ServiceProxy(node.service("check_state_validity"), GetStateValidity, persistent=True),
        "states": rospy.ServiceProxy(node.service("check_states"), GetStatesValidity, persistent=True),
        "trajectory": rospy.ServiceProxy(node.service("check_trajectory"), CheckTrajectory),
        "plan": rospy.ServiceProxy(node.service("plan"), Plan),
    }


def joint_state(names: Sequence[str], positions: Sequence[float]) -> Any:
    from sensor_msgs.msg import JointState
    return JointState(name=list(names), position=[float(x) for x in positions])


def robot_state(names: Sequence[str], positions: Sequence[float]) -> Any:
    from proximity_msgs.msg import RobotState
    return RobotState(joint_state=joint_state(names, positions))


class Latest:
    """The latest message of a topic (and a count), from a rospy subscription."""

    def __init__(self, topic: str, msg_type: type) -> None:
        import rospy
        self.msg: Any = None
        self.count = 0
        self.all: List[Any] = []
        self._lock = threading.Lock()
        self.sub = rospy.Subscriber(topic, msg_type, self._cb, queue_size=1000)

    def _cb(self, msg: Any) -> None:
        with self._lock:
            self.msg = msg
            self.count += 1
            self.all.append(msg)

    def wait(self, condition: Callable[[Any], bool], timeout: float = 30.0) -> Any:
        """The first latest message satisfying ``condition``; AssertionError after ``timeout`` s."""
        if not eventually(lambda: self.msg is not None and condition(self.msg), timeout, 0.02):
            raise AssertionError(f"no message on {self.sub.resolved_name} satisfied the condition; last: {self.msg}")
        return self.msg

    def close(self) -> None:
        self.sub.unregister()


__all__ = ["RosMaster", "BridgeProcess", "Daemon", "init_client_node", "proxies", "joint_state", "robot_state",
           "Latest", "eventually", "free_port", "need_kr5", "KR5_URDF", "KR5_JOINTS", "MSGS", "REPO"]
