"""An L7 gRPC proxy in front of replicas: Debian's nginx (grpc_pass) balancing each call over real
proximityd replicas on loopback ports, with the Python client pointed at nginx alone.

nginx runs from deploy/nginx/proximity-grpc.conf, the documented config, with only its listen address and
its upstream `server` lines replaced by free loopback ports; it runs unprivileged (as nobody when the tests
run as root) from a temporary folder that holds its pid file, logs and temporary files, and is stopped
(its whole process group) when each test ends. The oracle is one more replica reached directly, without
the proxy. Checked: answers through the proxy equal that replica's (batches of states, motions, path
streams, a session); one client connection to nginx reaches every replica (each replica's own
grpc_server_handled_total grows, and nginx's access log names every replica); a scene created through
the proxy lands on one replica and reaches the others by the client's NOT_FOUND re-upload (for unary
calls and for sessions); a path stream cut by its replica's death is repeated, and a session whose
replica died is opened again; a replica SIGKILLed in the middle of a run and a fresh one started on its
port cost no query.

Skipped, saying why, when nginx is not installed (scripts/setup.sh installs it).
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence

import numpy as np
import pytest

import support
from proximity_client import Client, NotFoundError, geometry

NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if os.access("/usr/sbin/nginx", os.X_OK) else None)
if NGINX is None:
    pytest.skip("proxy tests skipped: nginx is not installed (scripts/setup.sh installs Debian's nginx)",
                allow_module_level=True)

CONFIG_TEMPLATE = support.REPO / "deploy" / "nginx" / "proximity-grpc.conf"
#: The user nginx runs as when the tests run as root (Debian's nobody / nogroup).
NOBODY = 65534


def render_config(template: str, listen: str, servers: Sequence[str]) -> str:
    """The documented config with its listen address and upstream servers replaced (each server line
    keeps the template's parameters). Fails when the template no longer has the lines this replaces."""
    text, n = re.subn(r"(?m)^(\s*)listen\s+[0-9.]+:\d+(\s+http2;)", lambda m: f"{m[1]}listen {listen}{m[2]}", template)
    assert n == 1, f"{CONFIG_TEMPLATE}: expected one 'listen ADDRESS http2;' line, found {n}"
    lines = list(re.finditer(r"(?m)^(\s*)server\s+[0-9.]+:\d+([^;\n]*);\n", text))
    assert lines, f"{CONFIG_TEMPLATE}: no 'server ADDRESS ...;' line in the upstream block"
    indent, params = lines[0][1], lines[0][2]
    block = "".join(f"{indent}server {s}{params};\n" for s in servers)
    return text[:lines[0].start()] + block + text[lines[-1].end():]


class Nginx:
    """nginx on a free loopback port in front of `servers`, from a temporary prefix folder."""

    def __init__(self, servers: Sequence[str]) -> None:
        self.servers = list(servers)
        self.port = 0
        self.prefix = Path(tempfile.mkdtemp(prefix="proximity-nginx-"))
        for d in ("logs", "tmp"):
            (self.prefix / d).mkdir()
        self.conf = self.prefix / "proximity-grpc.conf"
        self.proc: Optional[subprocess.Popen] = None
        self.log = self.prefix / "stderr.txt"

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> "Nginx":
        for _attempt in range(3):  # a port taken between free_port() and nginx's bind: try another
            self.port = support.free_port()
            self.conf.write_text(render_config(CONFIG_TEMPLATE.read_text(), self.target, self.servers))
            drop: Dict[str, Any] = {}
            if os.geteuid() == 0:  # never run the proxy as root: its files go to nobody, and so does it
                for root, dirs, files in os.walk(self.prefix):
                    for name in [root] + [os.path.join(root, x) for x in dirs + files]:
                        os.chown(name, NOBODY, NOBODY)
                drop = dict(user=NOBODY, group=NOBODY, extra_groups=[])
            with self.log.open("wb") as err:
                self.proc = subprocess.Popen([NGINX, "-p", str(self.prefix), "-c", str(self.conf), "-g", "daemon off;"],
                                             stdin=subprocess.DEVNULL, stdout=err, stderr=err,
                                             start_new_session=True, **drop)
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and self.proc.poll() is None:
                try:
                    with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                        return self
                except OSError:
                    time.sleep(0.05)
            if self.proc.poll() is None:
                self.stop()
                raise TimeoutError(f"nginx did not listen on {self.target} within {timeout} s:\n{self.errors()}")
            if "Address already in use" not in self.errors():
                break
        raise RuntimeError(f"nginx exited with {self.proc.returncode} at start:\n{self.errors()}")

    def errors(self) -> str:
        out = []
        for p in (self.log, self.prefix / "logs" / "error.log"):
            if p.exists():
                out.append(f"--- {p.name}\n{p.read_text(errors='replace')}")
        return "\n".join(out)

    def upstreams(self) -> Dict[str, int]:
        """Calls per replica address, from the access log ($upstream_addr; a call nginx tried on several
        replicas counts for each)."""
        counts: Dict[str, int] = {}
        path = self.prefix / "logs" / "access.log"
        for line in path.read_text().splitlines() if path.exists() else []:
            m = re.search(r" upstream=(.*?) grpc_status=", line)
            for addr in re.findall(r"[0-9.]+:\d+", m[1] if m else ""):
                counts[addr] = counts.get(addr, 0) + 1
        return counts

    def stop(self) -> None:
        """SIGTERM (nginx's fast shutdown), then SIGKILL to its process group (master and workers)."""
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    pass
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)  # a worker left behind, if any
            except ProcessLookupError:
                pass
            self.proc.wait()
        shutil.rmtree(self.prefix, ignore_errors=True)


def _world() -> list:
    return [geometry.collision_object("wall", [geometry.box((0.05, 2.0, 2.0))], at=(0.5, 0.0, 0.5)),
            geometry.collision_object("ball", [geometry.sphere(0.15, at=(0.0, 0.0, 0.2))], at=(0.3, 0.3, 0.9))]


def _served(d: support.Daemon, rpc: str) -> int:
    """How many calls of `rpc` replica `d` has completed (its grpc_server_handled_total)."""
    samples = support.metric_samples(support.fetch(d.metrics_url))
    return int(sum(s.value for s in samples.get("grpc_server_handled_total", [])
                   if s.labels.get("grpc_method") == rpc))


def _scene_ids(d: support.Daemon) -> set:
    with d.client(timeout=30) as c:
        return {s.scene_id for s in c.list_scenes()}


class Front:
    """Three replicas behind nginx, and one more replica reached directly (the oracle)."""

    def __init__(self) -> None:
        self.replicas: List[support.Daemon] = []
        self.reference: Optional[support.Daemon] = None
        self.nginx: Optional[Nginx] = None
        self.fresh: Optional[support.Daemon] = None

    def start(self) -> "Front":
        for _ in range(3):
            self.replicas.append(support.Daemon("--threads", "1", "--log-level", "warn").start())
        self.reference = support.Daemon("--threads", "1", "--log-level", "warn", metrics=False).start()
        self.nginx = Nginx([d.target for d in self.replicas])
        self.nginx.start()
        return self

    def close(self) -> None:
        if self.nginx is not None:
            self.nginx.stop()
        for d in self.replicas + [self.reference, self.fresh]:
            if d is not None:
                d.kill()


@pytest.fixture
def front() -> Iterator[Front]:
    f = Front()
    try:
        yield f.start()
    finally:
        f.close()


def test_config_template_renders_every_replica() -> None:
    text = render_config(CONFIG_TEMPLATE.read_text(), "127.0.0.1:1234", ["127.0.0.1:1", "127.0.0.1:2"])
    assert "listen 127.0.0.1:1234 http2;" in text
    servers = re.findall(r"(?m)^\s*server (127\.0\.0\.1:\d+) ", text)
    assert servers == ["127.0.0.1:1", "127.0.0.1:2"]
    assert "grpc_pass grpc://proximityd;" in text and "client_max_body_size 0;" in text


def test_answers_through_the_proxy_equal_one_replica_and_every_replica_serves(front: Front) -> None:
    rng = np.random.default_rng(23)
    assert front.nginx is not None and front.reference is not None
    with Client(front.nginx.target, timeout=120) as proxied, front.reference.client(timeout=120) as direct:
        proxied.wait_until_serving(timeout=30)
        assert proxied.target == front.nginx.target  # one address: one connection, balanced by nginx
        info = direct.get_scene("default")
        lower, upper = np.array([l.lower for l in info.limits]), np.array([l.upper for l in info.limits])
        states = lower + rng.random((4000, info.dof)) * (upper - lower)
        q0, q1 = support.random_motions(rng, lower, upper, 30)
        paths = [lower + rng.random((5, info.dof)) * (upper - lower) for _ in range(40)]
        before = [_served(d, "CheckStates") for d in front.replicas]

        expect = direct.check_states(states)
        got = np.concatenate([proxied.check_states(c) for c in np.array_split(states, 24)])
        assert 0 < int(expect.sum()) < len(expect), "the states should be neither all free nor all in collision"
        np.testing.assert_array_equal(got, expect)
        # Large requests pass too (one call of all 4,000 states, about 200 kB).
        np.testing.assert_array_equal(proxied.check_states(states, batch_size=len(states)), expect)

        for a, b in zip(q0, q1):
            r, e = proxied.check_motion(a, b), direct.check_motion(a, b)
            assert (r.free, r.t_free, r.t_collide) == (e.free, e.t_free, e.t_collide)
        key = [(r.free, r.segment, r.motion.t_free, r.motion.t_collide) for r in direct.validate_paths(paths, progress=False)]
        assert any(k[0] for k in key) and not all(k[0] for k in key)
        for _ in range(3):
            got_paths = proxied.validate_paths(paths, progress=False)
            assert [(r.free, r.segment, r.motion.t_free, r.motion.t_collide) for r in got_paths] == key
        # A query session (bidi stream) through the proxy: one replica answers the whole stream.
        with proxied.session() as s, direct.session() as t:
            np.testing.assert_array_equal(s.check_states(states[:64]), t.check_states(states[:64]))
            for a, b in zip(q0[:8], q1[:8]):
                r, e = s.check_motion(a, b), t.check_motion(a, b)
                assert (r.free, r.t_free, r.t_collide) == (e.free, e.t_free, e.t_collide)

        # Per call balancing: one client connection, and every replica answered a share of the 25
        # CheckStates calls (nginx's round robin gives each about a third).
        after = [_served(d, "CheckStates") for d in front.replicas]
        served = [a - b for a, b in zip(after, before)]
        assert sum(served) == 25, served
        assert all(n >= 5 for n in served), f"CheckStates calls per replica through the proxy: {served}"
        by_upstream = front.nginx.upstreams()
        assert set(by_upstream) == {d.target for d in front.replicas}, by_upstream
        print(f"\n[proxy] CheckStates calls per replica: {served}; calls per upstream in nginx's log: {by_upstream}")


def test_a_scene_created_through_the_proxy_reaches_every_replica(front: Front) -> None:
    """CreateScene through nginx lands on one replica; sessions and calls that reach the others fail
    NOT_FOUND there, and the client sends the scene again: in the end every replica holds it and every
    answer equals the oracle's."""
    rng = np.random.default_rng(5)
    assert front.nginx is not None and front.reference is not None
    with Client(front.nginx.target, timeout=120) as proxied, front.reference.client(timeout=120) as direct:
        proxied.wait_until_serving(timeout=30)
        scene = proxied.create_scene_from_files(support.KR5_URDF, objects=_world())
        holders = [d for d in front.replicas if scene.scene_id in _scene_ids(d)]
        assert len(holders) == 1, "CreateScene through the proxy should reach one replica"
        ref = direct.create_scene_from_files(support.KR5_URDF, objects=_world())
        assert ref.scene_id == scene.scene_id  # content ids: the same scene everywhere
        info = direct.get_scene(ref.scene_id)
        lower, upper = np.array([l.lower for l in info.limits]), np.array([l.upper for l in info.limits])
        chunks = [lower + rng.random((300, info.dof)) * (upper - lower) for _ in range(9)]
        q0, q1 = support.random_motions(rng, lower, upper, 9)
        # Sessions first: the replica a session's stream reaches may lack the scene (NOT_FOUND at open);
        # the client re-sends it and opens the session again.
        reopened = 0
        for c, a, b in zip(chunks[:3], q0, q1):
            with proxied.session(scene=scene.scene_id) as s:
                np.testing.assert_array_equal(s.check_states(c[:64]), direct.check_states(c[:64], scene=ref.scene_id))
                r, e = s.check_motion(a, b), direct.check_motion(a, b, scene=ref.scene_id)
                assert (r.free, r.t_free, r.t_collide) == (e.free, e.t_free, e.t_collide)
                reopened += s.reopened
        assert reopened >= 1, "no session reached a replica that lacked the scene"
        for c, a, b in zip(chunks, q0, q1):
            np.testing.assert_array_equal(proxied.check_states(c, scene=scene.scene_id),
                                          direct.check_states(c, scene=ref.scene_id))
            r, e = proxied.check_motion(a, b, scene=scene.scene_id), direct.check_motion(a, b, scene=ref.scene_id)
            assert (r.free, r.t_free, r.t_collide) == (e.free, e.t_free, e.t_collide)
        assert all(scene.scene_id in _scene_ids(d) for d in front.replicas)
        assert proxied.scene_restores >= 2, proxied.scene_restores  # the two replicas that lacked it
        # A client that did not create the scene cannot restore it: NOT_FOUND from a replica that lacks
        # it reaches the caller (here: a scene only the oracle holds, unknown behind the proxy).
        only_ref = direct.create_scene_from_files(support.KR5_URDF, objects=_world()[:1])
        with Client(front.nginx.target, timeout=60) as other:
            with pytest.raises(NotFoundError):
                other.check_states(chunks[0], scene=only_ref.scene_id)


def _in_flight(d: support.Daemon, rpc: str) -> int:
    """Calls of `rpc` replica `d` has started and not yet finished."""
    samples = support.metric_samples(support.fetch(d.metrics_url))

    def total(name: str) -> float:
        return sum(s.value for s in samples.get(name, []) if s.labels.get("grpc_method") == rpc)
    return int(total("grpc_server_started_total") - total("grpc_server_handled_total"))


def test_a_path_stream_cut_when_its_replica_dies_is_repeated(front: Front) -> None:
    """The replica answering a ValidatePaths stream is SIGKILLed after the first results arrived. nginx
    cannot send a status for a response it had begun, so it resets the client's stream (gRPC: INTERNAL
    "Received RST_STREAM with error code 2"); the client repeats the call, another replica answers it,
    and the results equal the oracle's."""
    rng = np.random.default_rng(8)
    assert front.nginx is not None and front.reference is not None
    with Client(front.nginx.target, timeout=120) as proxied, front.reference.client(timeout=120) as direct:
        proxied.wait_until_serving(timeout=30)
        info = direct.get_scene("default")
        lower, upper = np.array([l.lower for l in info.limits]), np.array([l.upper for l in info.limits])
        paths = [lower + rng.random((6, info.dof)) * (upper - lower) for _ in range(600)]
        expect = [(r.free, r.segment, r.motion.t_free, r.motion.t_collide)
                  for r in direct.validate_paths(paths, progress=False)]
        seen, killed = [0], []

        def kill_the_answering_replica(index: int, result: Any) -> None:
            seen[0] += 1
            if seen[0] == 20 and not killed:
                serving = [d for d in front.replicas if _in_flight(d, "ValidatePaths") > 0]
                assert len(serving) == 1, "one replica should be answering the stream"
                serving[0].proc.send_signal(signal.SIGKILL)
                serving[0].proc.wait()
                killed.append(serving[0])

        got = proxied.validate_paths(paths, progress=False, on_result=kill_the_answering_replica)
        assert killed, "the stream ended before the kill"
        assert seen[0] > len(paths), "the call was not repeated"
        assert proxied.unavailable_retries >= 1
        assert [(r.free, r.segment, r.motion.t_free, r.motion.t_collide) for r in got] == expect


def test_a_session_whose_replica_dies_behind_the_proxy_is_opened_again(front: Front) -> None:
    """A session through nginx, its replica SIGKILLed between round trips: nginx resets the session's
    stream, the next round trip fails, the session is opened again (nginx picks a live replica) and
    every answer equals the oracle's."""
    rng = np.random.default_rng(13)
    assert front.nginx is not None and front.reference is not None
    with Client(front.nginx.target, timeout=60) as proxied, front.reference.client(timeout=60) as direct:
        proxied.wait_until_serving(timeout=30)
        info = direct.get_scene("default")
        lower, upper = np.array([l.lower for l in info.limits]), np.array([l.upper for l in info.limits])
        chunks = [lower + rng.random((100, info.dof)) * (upper - lower) for _ in range(6)]
        with proxied.session() as s:
            killed = None
            for i, c in enumerate(chunks):
                np.testing.assert_array_equal(s.check_states(c), direct.check_states(c))
                if i == 2:
                    serving = [d for d in front.replicas if _in_flight(d, "Session") > 0]
                    assert len(serving) == 1, "one replica should hold the session's stream"
                    killed = serving[0]
                    killed.proc.send_signal(signal.SIGKILL)
                    killed.proc.wait()
            assert killed is not None and s.reopened >= 1


def test_a_replica_killed_behind_the_proxy_loses_no_query(front: Front) -> None:
    rng = np.random.default_rng(41)
    assert front.nginx is not None and front.reference is not None
    with front.reference.client(timeout=120) as direct:
        scene = direct.create_scene_from_files(support.KR5_URDF, objects=_world())
        info = direct.get_scene(scene.scene_id)
        lower, upper = np.array([l.lower for l in info.limits]), np.array([l.upper for l in info.limits])
        chunks = [lower + rng.random((1000, info.dof)) * (upper - lower) for _ in range(48)]
        q0, q1 = support.random_motions(rng, lower, upper, 48)
        paths = [lower + rng.random((5, info.dof)) * (upper - lower) for _ in range(24)]
        expect_states = [direct.check_states(c, scene=scene.scene_id) for c in chunks]
        expect_motions = [direct.check_motion(a, b, scene=scene.scene_id) for a, b in zip(q0, q1)]
        expect_paths = direct.validate_paths(paths, progress=False, scene=scene.scene_id)

    victim = front.replicas[1]
    client = Client(front.nginx.target, timeout=120)
    client.create_scene_from_files(support.KR5_URDF, objects=_world())
    got_states: Dict[int, np.ndarray] = {}
    got_motions: Dict[int, Any] = {}
    got_paths: List[Any] = []

    def step(i: int) -> None:
        got_states[i] = client.check_states(chunks[i], scene=scene.scene_id, batch_size=250)
        got_motions[i] = client.check_motion(q0[i], q1[i], scene=scene.scene_id)
        if i % 4 == 3:
            got_paths.append(client.validate_paths(paths, progress=False, scene=scene.scene_id))

    def replace() -> support.Daemon:
        front.fresh = support.Daemon("--threads", "1", "--log-level", "warn", port=victim.port).start()
        return front.fresh

    try:
        support.run_through_a_kill(len(chunks), step, victim, replace)
        for i, expect in enumerate(expect_states):
            np.testing.assert_array_equal(got_states[i], expect)
        for i, r in got_motions.items():
            e = expect_motions[i]
            assert (r.free, r.t_free, r.t_collide) == (e.free, e.t_free, e.t_collide), i
        assert len(got_paths) == len(chunks) // 4
        for results in got_paths:
            assert [(r.free, r.segment, r.motion.t_free, r.motion.t_collide) for r in results] == \
                   [(r.free, r.segment, r.motion.t_free, r.motion.t_collide) for r in expect_paths]

        # nginx tries the fresh replica again after fail_timeout; the client then sends it the scene.
        fresh = front.fresh

        def fresh_serves() -> bool:
            np.testing.assert_array_equal(client.check_states(chunks[0], scene=scene.scene_id), expect_states[0])
            return _served(fresh, "CheckStates") > 0 and scene.scene_id in _scene_ids(fresh)
        assert support.eventually(fresh_serves, timeout=60, interval=0.2)
        print(f"\n[proxy] {len(chunks)} batches of {len(chunks[0])} states, {len(chunks)} motions, {len(got_paths)} x "
              f"{len(paths)} paths through nginx over 3 replicas, one SIGKILLed a third of the way and "
              f"replaced: 0 failed; the client repeated {client.unavailable_retries} calls after UNAVAILABLE and "
              f"re-sent the scene {client.scene_restores} times; calls per upstream {front.nginx.upstreams()}")
    finally:
        client.close()
