"""Test support: locating the build, starting real proximityd processes, and running proximity-scene.

Where things are found (ctest sets the first three; by hand, PROXIMITY_BUILD_DIR is enough):

* ``PROXIMITYD``: the daemon binary, else ``$PROXIMITY_BUILD_DIR/server/proximityd`` (default build dir:
  ``<repo>/build``).
* ``PROXIMITY_SCENE_TOOL``: ``proximity-scene``, else ``$PROXIMITY_BUILD_DIR/tools/proximity-scene``.
* ``PROXIMITY_STUBS_DIR``: the generated stubs, else ``$PROXIMITY_BUILD_DIR/clients/python/gen``.
"""
from __future__ import annotations

import collections
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Deque, Dict, List, Optional, Sequence, Tuple

import numpy as np

REPO = Path(__file__).resolve().parents[3]
BUILD = Path(os.environ.get("PROXIMITY_BUILD_DIR", REPO / "build")).resolve()
DAEMON = Path(os.environ.get("PROXIMITYD", BUILD / "server" / "proximityd"))
SCENE_TOOL = Path(os.environ.get("PROXIMITY_SCENE_TOOL", BUILD / "tools" / "proximity-scene"))
STUBS = Path(os.environ.get("PROXIMITY_STUBS_DIR", BUILD / "clients" / "python" / "gen"))
PY_SRC = REPO / "clients" / "python" / "src"
#: The robot of the built-in scene (server/default_scene.cc), used to create scenes of our own.
KR5_URDF = "/usr/share/doc/dart/data/urdf/KR5/KR5 sixx R650.urdf"
#: Folders whose files the tests' daemons let requests name (--allow-path-root).
PATH_ROOTS = [Path("/usr/share/doc/dart/data/urdf"), REPO / "tests" / "data"]

for p in (str(PY_SRC), str(STUBS)):
    if p not in sys.path:
        sys.path.append(p)
os.environ.setdefault("PROXIMITY_STUBS_DIR", str(STUBS))

from proximity_client import Client  # noqa: E402


def free_port() -> int:
    """A loopback TCP port nobody listens on right now (bound, read, released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Daemon:
    """A real proximityd process on free loopback ports; stderr is collected by a reader thread.

    ``start()`` returns once the daemon printed "proximityd listening on" (or fails with its stderr).
    """

    def __init__(self, *extra_args: str, binary: Path = DAEMON, metrics: bool = True,
                 path_roots: Optional[Sequence[Path]] = None, env: Optional[Dict[str, str]] = None,
                 port: int = 0) -> None:
        self.binary = binary
        # A fixed gRPC port (a replica restarted where its predecessor listened); 0: a free one.
        self.fixed_port = port
        # Variables added to the daemon's environment (this process's otherwise).
        self.env = None if env is None else {**os.environ, **env}
        # The folders the tests name server files in (urdf_path, srdf_path): requests may read nothing else.
        roots = PATH_ROOTS if path_roots is None else path_roots
        self.extra_args = [a for r in roots if Path(r).is_dir() for a in ("--allow-path-root", str(r))]
        self.extra_args += list(extra_args)
        self.metrics = metrics
        self.port = 0
        self.metrics_port = 0
        self.proc: Optional[subprocess.Popen] = None
        self.lines: Deque[str] = collections.deque(maxlen=4000)
        self._listening = threading.Event()
        self._reader: Optional[threading.Thread] = None

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def metrics_url(self) -> str:
        return f"http://127.0.0.1:{self.metrics_port}/metrics"

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        for raw in self.proc.stderr:
            line = raw.decode(errors="replace").rstrip("\n")
            self.lines.append(line)
            if "proximityd listening on" in line:
                self._listening.set()

    def start(self, timeout: float = 60.0) -> "Daemon":
        if not self.binary.exists():
            raise FileNotFoundError(f"proximityd not found at {self.binary}: build it or set PROXIMITYD")
        last_error = ""
        for _attempt in range(3):  # a port taken between free_port() and bind: try other ports
            self.port, self.metrics_port = self.fixed_port or free_port(), free_port()
            args = [str(self.binary), "--listen", self.target, "--log-format", "json",
                    "--metrics-listen", f"127.0.0.1:{self.metrics_port}" if self.metrics else ""]
            self.lines.clear()
            self._listening.clear()
            self.proc = subprocess.Popen(args + self.extra_args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.PIPE, env=self.env)
            self._reader = threading.Thread(target=self._read, daemon=True)
            self._reader.start()
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                if self._listening.wait(0.05):
                    return self
                if self.proc.poll() is not None:
                    break
            self._reader.join(timeout=2)
            last_error = self.stderr_text()
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
                raise TimeoutError(f"proximityd did not report listening within {timeout} s:\n{last_error}")
        raise RuntimeError(f"proximityd exited with {self.proc.returncode} at start:\n{last_error}")

    def stderr_text(self) -> str:
        return "\n".join(self.lines)

    def log_records(self, **match: Any) -> List[Dict[str, Any]]:
        """The daemon's JSON log lines so far whose fields equal `match` (e.g. rpc="CheckMotion",
        msg="rpc failed"); lines that are not JSON objects are skipped."""
        out = []
        for line in list(self.lines):
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if isinstance(rec, dict) and all(rec.get(k) == v for k, v in match.items()):
                out.append(rec)
        return out

    def client(self, **kwargs: Any) -> Client:
        kwargs.setdefault("timeout", 60.0)
        return Client(self.target, **kwargs)

    def terminate(self, timeout: float = 30.0) -> int:
        """SIGTERM, then wait for the exit; returns the exit code (kills and raises on a hang)."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise TimeoutError(f"proximityd did not exit within {timeout} s of SIGTERM:\n{self.stderr_text()}")
        if self._reader is not None:
            self._reader.join(timeout=5)
        return rc

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self) -> "Daemon":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.kill()


def run_cli(daemon: Daemon, *args: str, env_extra: Optional[Dict[str, str]] = None) -> subprocess.CompletedProcess:
    """The `proximity` CLI (python -m proximity_client) against `daemon`, as a user runs it (the
    environment's PROXIMITY_SCENE left out unless `env_extra` sets it)."""
    env = dict(os.environ)
    env.pop("PROXIMITY_SCENE", None)
    env.update(env_extra or {})
    env["PYTHONPATH"] = os.pathsep.join([str(PY_SRC), str(STUBS)])
    return subprocess.run(["/usr/bin/python3", "-m", "proximity_client", *args, "--target", daemon.target],
                          capture_output=True, text=True, env=env, timeout=300)


def run_scene_tool(*args: str) -> Dict[str, Any]:
    """Runs proximity-scene and parses its JSON (fails the test with its stderr on an error)."""
    proc = subprocess.run([str(SCENE_TOOL), *args], capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise AssertionError(f"proximity-scene {' '.join(args)} exited {proc.returncode}: {proc.stderr}")
    return json.loads(proc.stdout)


def write_rows(rows: np.ndarray, directory: Path, name: str) -> Path:
    """Writes rows as text for proximity-scene, with full double precision (repr round-trips)."""
    path = directory / name
    with path.open("w") as f:
        for r in np.atleast_2d(rows):
            f.write(" ".join(repr(float(x)) for x in r) + "\n")
    return path


def tool_states(states: np.ndarray) -> List[Dict[str, Any]]:
    """CLEAR in process for each row."""
    with tempfile.TemporaryDirectory() as d:
        return run_scene_tool("states", str(write_rows(states, Path(d), "states.txt")))["results"]


def tool_motions(q0: np.ndarray, q1: np.ndarray, mode: str = "certified",
                 resolution: Optional[float] = None) -> List[Dict[str, Any]]:
    """LINK in process for each pair of rows."""
    extra: List[str] = ["--mode", mode]
    if resolution is not None:
        extra += ["--resolution", repr(float(resolution))]
    with tempfile.TemporaryDirectory() as d:
        path = write_rows(np.hstack([q0, q1]), Path(d), "motions.txt")
        return run_scene_tool("motions", str(path), *extra)["results"]


def contact_names(pair: Any) -> Optional[tuple]:
    """(robot, other, self) of a client Pair or a tool contact dict, or None."""
    if pair is None:
        return None
    if isinstance(pair, dict):
        return (pair["robot"], pair["other"], pair["self"])
    return (pair.robot, pair.other, pair.self_collision)


def random_motions(rng: np.random.Generator, lower: np.ndarray, upper: np.ndarray, n: int,
                   short_fraction: float = 0.5, step: float = 0.4) -> "tuple[np.ndarray, np.ndarray]":
    """``n`` motions within the limits: long ones between two uniform states, and short ones (a random
    step of at most ``step`` rad per joint from a uniform state, clipped to the limits)."""
    dof = len(lower)
    q0 = lower + rng.random((n, dof)) * (upper - lower)
    q1 = lower + rng.random((n, dof)) * (upper - lower)
    short = rng.random(n) < short_fraction
    q1[short] = np.clip(q0[short] + rng.uniform(-step, step, (int(short.sum()), dof)), lower, upper)
    return q0, q1


def metric_samples(text: str) -> Dict[str, List[Any]]:
    """Prometheus text -> {sample name: [Sample, ...]} (parsed with prometheus_client)."""
    from prometheus_client.parser import text_string_to_metric_families
    out: Dict[str, List[Any]] = collections.defaultdict(list)
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[s.name].append(s)
    return out


def eventually(condition: Callable[[], bool], timeout: float = 20.0, interval: float = 0.05) -> bool:
    """Polls `condition` until it holds (True) or `timeout` seconds pass (False)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)
    return True


def terminate_during(daemon: "Daemon", call: Callable[[], Any], after: float,
                     timeout: float = 30.0) -> Tuple[int, float, List[BaseException], bool]:
    """Runs `call` on a thread, sends the daemon SIGTERM `after` seconds later and waits for it to exit:
    (its exit code, seconds from SIGTERM to exit, what the call raised, whether the call's thread still
    runs 10 s after the exit)."""
    errors: List[BaseException] = []

    def run() -> None:
        try:
            call()
        except BaseException as e:  # noqa: BLE001 - handed to the caller's assertions
            errors.append(e)

    t = threading.Thread(target=run)
    t.start()
    time.sleep(after)
    start = time.monotonic()
    rc = daemon.terminate(timeout=timeout)
    elapsed = time.monotonic() - start
    t.join(timeout=10)
    return rc, elapsed, errors, t.is_alive()


def fetch(url: str, timeout: float = 10.0) -> str:
    import urllib.request
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def viewer_api(daemon: "Daemon", method: str, body: Dict[str, Any], timeout: float = 10.0) -> Dict[str, Any]:
    """POSTs `body` to the daemon's viewer API method (on its metrics port) and returns the JSON reply;
    raises urllib.error.HTTPError on a refusal."""
    import urllib.request
    request = urllib.request.Request(f"http://127.0.0.1:{daemon.metrics_port}/viewer/api/{method}",
                                     data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as r:
        return json.loads(r.read())


def same_scenes(a: Sequence[Any], b: Sequence[Any]) -> bool:
    """Whether two list_scenes answers hold the same scenes (ids and versions), in any order."""
    return sorted((s.scene_id, s.version) for s in a) == sorted((s.scene_id, s.version) for s in b)


def run_through_a_kill(steps: int, step: Callable[[int], None], victim: "Daemon",
                       replace: Callable[[], "Daemon"]) -> "Daemon":
    """Runs ``step(0)`` .. ``step(steps - 1)`` on a worker thread; once a third are done, SIGKILLs ``victim``
    (no drain: calls in flight on it are cut); once two thirds are done, starts its replacement with
    ``replace()``. Waits for the worker and re-raises what it raised; asserts the kill came before the
    run ended. Returns the replacement."""
    done = 0
    errors: List[BaseException] = []
    progress = threading.Condition()

    def drive() -> None:
        nonlocal done
        try:
            for i in range(steps):
                step(i)
                with progress:
                    done = i + 1
                    progress.notify_all()
        except BaseException as e:  # noqa: BLE001 - re-raised below
            with progress:
                errors.append(e)
                progress.notify_all()

    worker = threading.Thread(target=drive)
    worker.start()
    with progress:
        assert progress.wait_for(lambda: done >= steps // 3 or errors, timeout=300)
    victim.proc.send_signal(signal.SIGKILL)
    victim.proc.wait()
    with progress:
        done_at_kill = done
        assert progress.wait_for(lambda: done >= 2 * steps // 3 or errors, timeout=300)
    fresh = replace()
    worker.join(timeout=600)
    assert not worker.is_alive()
    if errors:
        raise errors[0]
    assert done_at_kill < steps, "the run ended before the kill"
    return fresh
