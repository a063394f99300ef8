"""Faults against a real proximityd (and its JSON log lines, server/log.cc): deadlines that pass inside long LINK work while other clients are
served, a stream cancelled after its first results, a client that stops reading its stream, SIGTERM under
the load of eight clients, and requests over the server's limits.

Every test checks that the fault ends promptly (bounded by the deadline, the drain period or the
cancellation, plus a few seconds of slack: never a speed assertion), that the daemon's own record of the
call (its JSON log line or its metrics) says how it ended, and that the daemon keeps giving the same
answers as before to its other clients.

test_hardening.py covers a deadline and SIGTERM on one lone discrete check, test_errors.py a cancelled
stream counted by the metrics and over-limit requests' status codes, test_ops.py SIGTERM during one large
batch; the cases here add concurrency, certified work, the server's logs, a stalled reader and memory.
"""
from __future__ import annotations

import re
import subprocess
import threading
import time
from typing import Any, Callable, Dict, Iterator, List, Optional

import grpc
import numpy as np
import pytest

import soak
import support
from proximity_client import (Client, DeadlineExceededError, ProximityError, ResourceExhaustedError, SceneInfo,
                              geometry)
from proximity_client.client import configurations, pb  # the wire helpers, for hand-made requests

# The client-side bound on stopping: a deadline, drain period or cancellation plus this.
SLACK = 2.0


# ---- helpers ----------------------------------------------------------------------------------------

def rpc_lines(daemon: support.Daemon, rpc: str) -> List[Dict[str, Any]]:
    """The daemon's JSON log lines about calls of `rpc` (failed calls are logged at info level)."""
    return daemon.log_records(rpc=rpc)


def code_is(rec: Dict[str, Any], *names: str) -> bool:
    """Whether a log line's code is one of `names` (the daemon spells codes as Go does: "Canceled")."""
    def norm(c: str) -> str:
        return c.replace("_", "").lower().replace("cancelled", "canceled")
    return norm(str(rec.get("code", ""))) in {norm(n) for n in names}


def new_line(daemon: support.Daemon, rpc: str, before: int, timeout: float) -> Optional[Dict[str, Any]]:
    """The first log line about `rpc` after the first `before` ones, waiting up to `timeout` s."""
    if not support.eventually(lambda: len(rpc_lines(daemon, rpc)) > before, timeout=timeout):
        return None
    return rpc_lines(daemon, rpc)[before]


def long_resolution(q0: np.ndarray, q1: np.ndarray) -> float:
    """A discrete resolution that samples just under the server's cap of 1e7 states on q0 -> q1."""
    return float(np.linalg.norm(q1 - q0)) / 0.99e7


class Reference:
    """Fixed requests of the default scene with their answers, asked one at a time before any fault."""

    def __init__(self, client: Client, info: SceneInfo, seed: int) -> None:
        rng = np.random.default_rng(seed)
        self.pool = soak.make_pool(rng, info.lower, info.upper,
                                   soak.Sizes(batches=2, batch_rows=300, motions=12, paths=4, sets=2, set_paths=6))
        self.answers = soak.reference_answers(client, "default", self.pool)
        states = self.pool["states"][0]
        self.free = states[self.answers["check_states"][0]]

    def check(self, client: Client, kind: str, i: int, timeout: float = 30.0) -> Optional[str]:
        """Asks request `i` of `kind`; None when the answer is the reference's, else what differs."""
        got = soak.ask(client, "default", kind, soak.pool_requests(self.pool, kind)[i], timeout=timeout)
        want = self.answers[kind][i]
        if kind == "check_states":
            return None if np.array_equal(got, want) else f"check_states #{i}: {int((got != want).sum())} differ"
        return None if soak.compare(got, want) != "different" else f"{kind} #{i}: {got!r} != {want!r}"

    def check_all(self, client: Client) -> List[str]:
        return [d for kind in soak.QUERY_KINDS for i in range(len(soak.pool_requests(self.pool, kind)))
                if (d := self.check(client, kind, i)) is not None]


class Bystander(threading.Thread):
    """Another client that keeps asking reference requests (bounded: at most `max_calls`, until stopped)
    and records wrong answers, errors and the longest call."""

    def __init__(self, target: str, ref: Reference, max_calls: int = 5000) -> None:
        super().__init__(daemon=True)
        self.target, self.ref, self.max_calls = target, ref, max_calls
        self.calls = 0
        self.wrong: List[str] = []
        self.errors: List[str] = []
        self.longest = 0.0
        self._stop_event = threading.Event()

    def run(self) -> None:
        kinds = soak.QUERY_KINDS
        with Client(self.target, timeout=30, options=soak.CHANNEL_OPTIONS) as c:
            while not self._stop_event.is_set() and self.calls < self.max_calls:
                kind = kinds[self.calls % len(kinds)]
                i = (self.calls // len(kinds)) % len(soak.pool_requests(self.ref.pool, kind))
                t0 = time.monotonic()
                try:
                    diff = self.ref.check(c, kind, i)
                except ProximityError as e:
                    self.errors.append(str(e))
                    diff = None
                self.longest = max(self.longest, time.monotonic() - t0)
                self.calls += 1
                if diff:
                    self.wrong.append(diff)

    def stop(self) -> None:
        self._stop_event.set()
        self.join(timeout=60)
        assert not self.is_alive(), "the bystander client hangs"


@pytest.fixture(scope="module")
def ref(client: Client, info: SceneInfo) -> Reference:
    return Reference(client, info, seed=4242)


@pytest.fixture
def bystander(daemon: support.Daemon, ref: Reference) -> Iterator[Bystander]:
    """A client asking reference requests of the module's daemon during the test; after it, every answer
    it got was the reference's."""
    b = Bystander(daemon.target, ref)
    b.start()
    yield b
    b.stop()
    assert not b.errors, b.errors[:3]
    assert not b.wrong, b.wrong[:3]


def run_in_thread(fn: Callable[[], Any]) -> "tuple[threading.Thread, Dict[str, Any]]":
    """Runs fn in a thread; the dict gets "result" or "error" and "seconds"."""
    out: Dict[str, Any] = {}

    def body() -> None:
        t0 = time.monotonic()
        try:
            out["result"] = fn()
        except BaseException as e:  # noqa: BLE001 - examined by the test
            out["error"] = e
        out["seconds"] = time.monotonic() - t0

    t = threading.Thread(target=body, daemon=True)
    t.start()
    return t, out


# ---- deadlines inside LINK ----------------------------------------------------------------------------

def test_deadlines_inside_link_under_load(daemon: support.Daemon, client: Client, ref: Reference,
                                          bystander: Bystander) -> None:
    """More long calls than the server has workers, each with a deadline that passes mid-LINK (discrete
    motions sampling ~1e7 states, a certified path of 100,000 tiny segments, a certified ValidatePaths):
    every one ends DEADLINE_EXCEEDED within its deadline + slack, the daemon's log says it stopped near the
    deadline, and a bystander client gets correct answers throughout."""
    q0 = ref.free[0]
    short = np.stack([q0, q0 + 1e-3])
    resolution = long_resolution(*short)
    t = np.linspace(0.0, 2.0 * np.pi, 100_000)[:, None]
    wiggle = q0 + 1e-3 * np.sin(t * np.arange(1, len(q0) + 1))  # free, and slow to certify
    paths = [wiggle[k: k + 20_000] for k in range(0, 100_000, 20_000)]
    timeout = 0.6
    calls = {
        "CheckMotion": [lambda: client.check_motion(*short, mode="discrete", resolution=resolution, timeout=timeout)
                        for _ in range(3)],
        "CheckPath": [lambda: client.check_path(wiggle, timeout=timeout)],
        "ValidatePaths": [lambda: client.validate_paths(paths, progress=False, timeout=timeout)],
    }
    before = {rpc: len(rpc_lines(daemon, rpc)) for rpc in calls}
    time.sleep(0.3)  # the bystander is running
    started = [(rpc, *run_in_thread(fn)) for rpc, fns in calls.items() for fn in fns]
    for rpc, thread, out in started:
        thread.join(timeout=timeout + SLACK + 5)
        assert not thread.is_alive(), f"{rpc} still running {timeout + SLACK + 5} s after a {timeout} s deadline"
        assert isinstance(out.get("error"), DeadlineExceededError), (rpc, out)
        assert out["seconds"] < timeout + SLACK, (rpc, out["seconds"])
    for rpc, fns in calls.items():
        assert support.eventually(lambda: len(rpc_lines(daemon, rpc)) >= before[rpc] + len(fns), timeout=5), \
            f"no log line for {rpc}"
        for rec in rpc_lines(daemon, rpc)[before[rpc]:]:
            # The client's deadline timer cancels the call when it fires; the server, whose copy of the
            # deadline starts when the request arrives, may see that cancellation just before its own
            # deadline passes, and then records the call as cancelled.
            assert code_is(rec, "DeadlineExceeded", "Cancelled"), rec
            # The handler returned (and stopped working) within a second of the deadline.
            assert rec["latency_ms"] < (timeout + 1.0) * 1e3, rec
    assert bystander.calls > 0
    assert client.health() == "SERVING"


def test_max_call_seconds_bounds_calls_without_a_deadline(ref: Reference) -> None:
    """--max-call-seconds stops long LINK work that the client gave no deadline, unary or streamed:
    DEADLINE_EXCEEDED after about that long, and the daemon serves correctly afterwards."""
    limit = 1.0
    with support.Daemon("--max-call-seconds", str(limit)) as d, d.client(timeout=float("inf")) as c:
        c.wait_until_serving()
        q0 = ref.free[1]
        short = np.stack([q0, q0 + 1e-3])
        # Work that does not depend on what the daemon's caches hold: sampled checks just under the
        # step cap, one motion, and a path of three such segments.
        there_and_back = np.stack([q0, q0 + 1e-3, q0, q0 + 1e-3])
        for rpc, fn in (("CheckMotion", lambda: c.check_motion(*short, mode="discrete",
                                                               resolution=long_resolution(*short))),
                        ("CheckPath", lambda: c.check_path(there_and_back, mode="discrete",
                                                           resolution=long_resolution(*short))),
                        # A stream, which the server's stream watchdog also watches: the client gets
                        # the handler's own DEADLINE_EXCEEDED.
                        ("ValidatePaths", lambda: c.validate_paths([there_and_back], mode="discrete",
                                                                   resolution=long_resolution(*short),
                                                                   progress=False))):
            before = len(rpc_lines(d, rpc))
            t0 = time.monotonic()
            with pytest.raises(DeadlineExceededError):
                fn()
            assert time.monotonic() - t0 < limit + SLACK, rpc
            rec = new_line(d, rpc, before, timeout=5)
            assert rec is not None and code_is(rec, "DeadlineExceeded"), rec
        assert not ref.check_all(c)


def test_time_limits_beyond_the_clock_mean_no_limit(ref: Reference) -> None:
    """--max-call-seconds and --drain-seconds accept any finite number: one longer than the clock can
    count (1e12 s, about 32,000 years) is no limit, not an overflow into the past that would stop every
    call at its start. SIGTERM with nothing in flight still ends the daemon at once."""
    with support.Daemon("--max-call-seconds", "1e12", "--drain-seconds", "1e12") as d, d.client(timeout=60) as c:
        c.wait_until_serving()
        assert not ref.check_all(c)
        results = c.validate_paths(_stalled_paths(ref.free[2], 100), progress=False)
        assert len(results) == 100 and all(r.free for r in results)
        # The viewer's API calls the service with --max-call-seconds as their deadline.
        reply = support.viewer_api(d, "ListScenes", {}, timeout=30)
        assert {s["scene_id"] for s in reply["scenes"]} == {s.scene_id for s in c.list_scenes()}, reply
        assert d.terminate(timeout=20) == 0


@pytest.mark.parametrize("flag,value", [("--max-call-seconds", "nan"), ("--max-call-seconds", "0"),
                                        ("--max-call-seconds", "inf"), ("--drain-seconds", "nan"),
                                        ("--drain-seconds", "-1"), ("--drain-seconds", "inf"),
                                        ("--max-plan-seconds", "nan")])
def test_time_limits_that_are_not_numbers_of_seconds_are_refused(flag: str, value: str) -> None:
    p = subprocess.run([str(support.DAEMON), "--listen", "127.0.0.1:0", flag, value],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and flag in p.stderr, (p.returncode, p.stderr)


# ---- cancelled and stalled streams --------------------------------------------------------------------

def test_cancel_mid_stream_stops_the_work(daemon: support.Daemon, client: Client, info: SceneInfo, ref: Reference,
                                          bystander: Bystander) -> None:
    """A certified ValidatePaths stream cancelled after its first results: the daemon logs the call as
    cancelled having answered only part of the paths, stops within a bounded time, and keeps serving."""
    rng = np.random.default_rng(77)
    lower, upper = info.lower, info.upper
    # Long walks of small steps: slow to certify, so the stream is far from done when it is cancelled.
    paths = []
    for _ in range(600):
        q = ref.free[int(rng.integers(len(ref.free)))]
        paths.append(np.clip(q + np.cumsum(rng.uniform(-0.02, 0.02, (60, len(q))), axis=0), lower, upper))
    before = len(rpc_lines(daemon, "ValidatePaths"))
    stream = client.stream_paths(paths, timeout=120)
    got = 0
    with pytest.raises(ProximityError) as e:
        for _index, _result in stream:
            got += 1
            if got == 5:
                assert stream.cancel()
    assert e.value.code == grpc.StatusCode.CANCELLED
    rec = new_line(daemon, "ValidatePaths", before, timeout=SLACK + 3)
    assert rec is not None, "the daemon never logged the cancelled stream"
    assert code_is(rec, "Cancelled"), rec
    m = re.search(r"after (\d+) of (\d+) paths", rec.get("error", ""))
    assert m, rec
    done, total = int(m.group(1)), int(m.group(2))
    assert total == len(paths) and got <= done < total, rec
    print(f"cancelled after {got} results read: the daemon answered {done} of {total} paths")
    assert not ref.check_all(client)


def _stalled_paths(q: np.ndarray, n: int) -> List[np.ndarray]:
    """n one-waypoint paths: each answer is quick, so the daemon soon waits on a client that reads none."""
    return [q[None, :]] * n


@pytest.mark.parametrize("leave", ["cancel", "close_channel"])
def test_a_client_that_stops_reading(ref: Reference, leave: str) -> None:
    """A ValidatePaths client that never reads its stream fills the flow-control windows and the daemon's
    writer waits. Meanwhile other clients get correct answers; when the reader cancels or drops its
    channel, the daemon logs the call as cancelled, having sent only part of it, and stays healthy."""
    n = 300_000
    with support.Daemon() as d, d.client() as c:
        c.wait_until_serving()
        stalled = Client(d.target, timeout=float("inf"), options=soak.CHANNEL_OPTIONS)
        stream = stalled.stream_paths(_stalled_paths(ref.free[2], n), timeout=120)

        def running() -> float:
            samples = support.metric_samples(support.fetch(d.metrics_url))
            def count(name: str) -> float:
                return sum(s.value for s in samples.get(name, []) if s.labels.get("grpc_method") == "ValidatePaths")
            return count("grpc_server_started_total") - count("grpc_server_handled_total")

        assert support.eventually(lambda: running() == 1, timeout=10), "the stream did not start"
        time.sleep(1.5)
        assert running() == 1, "the daemon finished the stream the client never read: make it longer"
        # Other clients are served, correctly, while the writer waits.
        t0 = time.monotonic()
        assert not ref.check_all(c)
        assert time.monotonic() - t0 < 30
        before = len(rpc_lines(d, "ValidatePaths"))
        if leave == "cancel":
            stream.cancel()
        stalled.close()
        rec = new_line(d, "ValidatePaths", before, timeout=SLACK + 3)
        assert rec is not None, f"the stalled stream did not end after the client's {leave}"
        assert code_is(rec, "Cancelled"), rec
        m = re.search(r"after (\d+) of (\d+) paths", rec.get("error", ""))
        assert m and int(m.group(1)) < int(m.group(2)) == n, rec
        print(f"{leave}: the daemon had sent {m.group(1)} of {n} results to the client that read none")
        assert c.health() == "SERVING"
        assert not ref.check_all(c)
        # The stalled call's worker is back: a stream of the same size, read this time, completes.
        results = c.validate_paths(_stalled_paths(ref.free[2], 20_000), progress=False, timeout=60)
        assert len(results) == 20_000 and all(r.free for r in results)


def test_a_stalled_stream_without_a_deadline_ends_at_max_call_seconds(ref: Reference) -> None:
    # Long enough that the writer waits on the full windows before the limit passes (it fills them in
    # about a second); a shorter limit stops the stream between two writes, which works today.
    limit = 4.0
    with support.Daemon("--max-call-seconds", str(limit)) as d, d.client() as c:
        c.wait_until_serving()
        with Client(d.target, timeout=float("inf"), options=soak.CHANNEL_OPTIONS) as stalled:
            stream = stalled.stream_paths(_stalled_paths(ref.free[2], 300_000), timeout=float("inf"))
            try:
                rec = new_line(d, "ValidatePaths", 0, timeout=limit + SLACK + 2)
                assert rec is not None, "the stalled stream outlived --max-call-seconds"
                assert code_is(rec, "DeadlineExceeded"), rec
            finally:
                stream.cancel()


# ---- SIGTERM under load -------------------------------------------------------------------------------

def test_sigterm_under_load_drains_in_time(ref: Reference) -> None:
    """SIGTERM while eight clients are busy, a long LINK is in flight and a stream is stalled on a client
    that reads nothing: the daemon exits 0 within --drain-seconds + slack, every answer the clients got
    before it went away was the reference's, and every failure is UNAVAILABLE or CANCELLED."""
    drain = 2.0
    d = support.Daemon("--drain-seconds", str(drain)).start()
    try:
        with d.client() as c:
            c.wait_until_serving()
            work = soak.build_workload(c, clients=8, seed=31, families=False,
                                       default_sizes=soak.Sizes(batches=3, batch_rows=500, motions=24, paths=8,
                                                                sets=3, set_paths=8))
        results: List[Dict[str, Any]] = []
        codes = ("UNAVAILABLE", "CANCELLED")

        def client_loop(i: int) -> None:
            results.append(soak.run_client(i, d.target, work, seconds=30.0, seed=5, stop_codes=codes,
                                           call_timeout=30.0))

        workers = [threading.Thread(target=client_loop, args=(i,), daemon=True) for i in range(8)]
        for w in workers:
            w.start()
        q0 = ref.free[3]
        short = np.stack([q0, q0 + 1e-3])
        with Client(d.target, timeout=float("inf"), options=soak.CHANNEL_OPTIONS) as long_client, \
                Client(d.target, timeout=float("inf"), options=soak.CHANNEL_OPTIONS) as stalled:
            # Sampled segments just under the step cap, eight of them: work no cache shortens, far longer
            # than the drain (one such segment alone may end within it on a fast machine).
            long_path = np.stack([q0, q0 + 1e-3] * 4 + [q0])
            long_call, long_out = run_in_thread(lambda: long_client.check_path(
                long_path, mode="discrete", resolution=long_resolution(*short)))
            stream = stalled.stream_paths(_stalled_paths(q0, 300_000))
            time.sleep(2.0)
            assert long_call.is_alive(), "the long call finished before SIGTERM"
            t0 = time.monotonic()
            rc = d.terminate(timeout=drain + 30)
            elapsed = time.monotonic() - t0
            long_call.join(timeout=10)
            for w in workers:
                w.join(timeout=30)
            stream.cancel()
        assert rc == 0, d.stderr_text()[-3000:]
        assert elapsed < drain + SLACK + 1.0, f"exit took {elapsed:.1f} s with --drain-seconds {drain}"
        assert not long_call.is_alive() and not any(w.is_alive() for w in workers)
        err = long_out.get("error")
        assert isinstance(err, ProximityError) and err.code.name in codes, long_out
        assert len(results) == 8
        for r in results:
            assert r["errors"] == 0, r["error_samples"]
            assert r["mismatches"] == 0, r["mismatch_samples"]
            assert r["stopped_by"] in codes, r
        checked = sum(r["checked"] for r in results)
        assert checked > 0
        print(f"SIGTERM under load: exit 0 after {elapsed:.2f} s (--drain-seconds {drain:g}); {checked} answers "
              f"checked, clients stopped by {sorted(set(r['stopped_by'] for r in results))}, the long call by "
              f"{err.code.name}")
    finally:
        d.kill()


# ---- over the limits -----------------------------------------------------------------------------------

JOINTLESS_ROBOT = """<?xml version="1.0"?>
<robot name="pedestal">
  <link name="base"><collision><geometry><box size="0.4 0.4 0.2"/></geometry></collision></link>
</robot>"""


def test_over_limit_requests_are_refused_without_memory_growth(ref: Reference) -> None:
    """Requests over --max-batch-states, --max-path-waypoints and --max-message-bytes, round after round:
    each is RESOURCE_EXHAUSTED, and the daemon keeps none of what they carried or claimed.

    gRPC reads an over-size message before refusing it, so RSS moves by tens of MiB per 48 MB message and
    the allocator keeps some of it; what must not happen is growth with the number of refused requests.
    Six rounds carry 6 x 48 MB: the bound of 3 messages' worth over the level after the accepted requests
    fails if each refused message (or a copy) stayed, and holds for the allocator's retention."""
    max_states, max_waypoints, max_bytes = 20_000, 5_000, 8 << 20
    with support.Daemon("--max-batch-states", str(max_states), "--max-path-waypoints", str(max_waypoints),
                        "--max-message-bytes", str(max_bytes)) as d, d.client(timeout=60) as c:
        c.wait_until_serving()
        info = c.get_scene("default")
        rng = np.random.default_rng(9)
        fixed = c.create_scene(urdf=JOINTLESS_ROBOT).scene_id  # a robot without joints
        accepted = [
            lambda: c.check_states(info.sample(max_states, rng), batch_size=max_states),
            lambda: c.check_path(info.sample(max_waypoints, rng), mode="discrete", resolution=1.0),
            lambda: c.validate_paths([info.sample(1000, rng) for _ in range(max_states // 1000)], mode="discrete",
                                     resolution=1.0, progress=False),
            lambda: c.check_states(np.zeros((max_states, 0)), scene=fixed),
        ]
        refused: List[Callable[[], Any]] = [
            lambda: c.check_states(info.sample(max_states + 1, rng), batch_size=max_states + 1),
            lambda: c.check_path(info.sample(max_waypoints + 1, rng)),
            lambda: c.validate_paths([info.sample(1000, rng) for _ in range(max_states // 1000 + 1)],
                                     progress=False),
            # 48 MB in one message against an 8 MiB limit: refused by gRPC before any work.
            lambda: c.check_states(info.sample(1_000_000, rng), batch_size=1_000_000),
        ]

        def claimed(count: int) -> Any:
            """CheckStates on the robot without joints: only `count` says how big the batch is."""
            msg = configurations(np.zeros((1, 0)))
            msg.count = count
            return c._stub.CheckStates(pb.CheckStatesRequest(scene_id=fixed, states=msg), timeout=10)

        for _ in range(3):  # warm-up: the largest accepted requests, so allocator pools reach their size
            for fn in accepted:
                fn()
        rss_before = soak.proc_status(d.proc.pid)["VmRSS"]
        rounds, message_mib = 6, 1_000_000 * 6 * 8 / 2**20
        for _ in range(rounds):
            for fn in refused:
                with pytest.raises(ResourceExhaustedError):
                    fn()
            for count in (max_states + 1, 2**32 - 1):
                with pytest.raises(grpc.RpcError) as e:
                    claimed(count)
                assert e.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, e.value
        status = soak.proc_status(d.proc.pid)
        rss_after = status["VmRSS"]
        print(f"RSS {rss_before:.1f} MiB before the refused requests, {rss_after:.1f} after "
              f"(peak {status['VmHWM']:.1f})")
        assert rss_after <= rss_before + 3 * message_mib, (rss_before, rss_after, rounds * message_mib)
        assert c.health() == "SERVING"
        assert not ref.check_all(c)
        c.delete_scene(fixed)
