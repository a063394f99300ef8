"""Every error path raises the right exception with the right status code, and leaves the server as it
was: the same scenes loaded and the same answers afterwards."""
from __future__ import annotations

import math
import time
from typing import Iterator

import grpc
import numpy as np
import pytest

import support
from proximity_client import (CancelledError, Client, DeadlineExceededError, InvalidArgumentError, NotFoundError,
                              ProximityError, ResourceExhaustedError, SceneInfo, geometry)


@pytest.fixture(scope="module")
def probe(info: SceneInfo) -> np.ndarray:
    """Fixed states whose answers must not change across the error tests."""
    return info.sample(300, np.random.default_rng(404))


@pytest.fixture(scope="module")
def baseline(client: Client, probe: np.ndarray) -> "tuple[list, np.ndarray]":
    return client.list_scenes(), client.check_states(probe)


@pytest.fixture
def unchanged(client: Client, probe: np.ndarray, baseline: "tuple[list, np.ndarray]") -> Iterator[None]:
    """After the test: the server serves, lists the same scenes and gives the same answers."""
    yield
    assert client.health() == "SERVING"
    scenes, answers = baseline
    assert support.same_scenes(client.list_scenes(), scenes)
    np.testing.assert_array_equal(client.check_states(probe), answers)


def _expect(exc: type, code: grpc.StatusCode, fn, *args, **kwargs) -> ProximityError:
    with pytest.raises(exc) as e:
        fn(*args, **kwargs)
    assert e.value.code == code, e.value
    assert e.value.details, "the error carries no message"
    return e.value


def test_unknown_scene(client: Client, info: SceneInfo, unchanged: None) -> None:
    q = np.zeros(info.dof)
    bogus = "0" * 64
    for call in (lambda: client.check_state(q, scene=bogus), lambda: client.check_states(q[None], scene=bogus),
                 lambda: client.get_scene(bogus), lambda: client.check_motion(q, q, scene=bogus),
                 lambda: client.distance(q, scene=bogus), lambda: client.delete_scene(bogus),
                 lambda: client.validate_paths([np.stack([q, q])], scene=bogus, progress=False),
                 lambda: client.update_world(remove=["table"], scene=bogus)):
        _expect(NotFoundError, grpc.StatusCode.NOT_FOUND, call)


def test_nan_is_rejected(client: Client, info: SceneInfo, unchanged: None) -> None:
    q = np.zeros(info.dof)
    q[2] = math.nan
    e = _expect(InvalidArgumentError, grpc.StatusCode.INVALID_ARGUMENT, client.check_state, q)
    batch = np.zeros((50, info.dof))
    batch[37, 4] = math.nan
    _expect(InvalidArgumentError, grpc.StatusCode.INVALID_ARGUMENT, client.check_states, batch)
    _expect(InvalidArgumentError, grpc.StatusCode.INVALID_ARGUMENT, client.check_states, batch, encoding="repeated")
    _expect(InvalidArgumentError, grpc.StatusCode.INVALID_ARGUMENT, client.check_motion, np.zeros(info.dof), q)
    inf = np.zeros(info.dof)
    inf[0] = math.inf
    _expect(InvalidArgumentError, grpc.StatusCode.INVALID_ARGUMENT, client.check_state, inf)
    assert e.details


def test_wrong_dof(client: Client, info: SceneInfo, unchanged: None) -> None:
    for n in (info.dof - 1, info.dof + 1, 0):
        _expect(InvalidArgumentError, grpc.StatusCode.INVALID_ARGUMENT, client.check_state, np.zeros(n))
    # 3 rows of dof - 1 values: not a whole number of rows of dof values.
    _expect(InvalidArgumentError, grpc.StatusCode.INVALID_ARGUMENT, client.check_states, np.zeros((3, info.dof - 1)))
    _expect(InvalidArgumentError, grpc.StatusCode.INVALID_ARGUMENT, client.check_motion,
            np.zeros(info.dof), np.zeros(info.dof + 1))
    # More names than columns.
    _expect(InvalidArgumentError, grpc.StatusCode.INVALID_ARGUMENT, client.check_states,
            np.zeros((4, info.dof - 1)), joint_names=info.joint_names)


def test_unknown_joint_name(client: Client, info: SceneInfo, unchanged: None) -> None:
    # In a joint state by name, a joint the robot lacks is ignored, as MoveIt ignores it...
    q = {name: 0.0 for name in info.joint_names}
    q["no_such_joint"] = 0.1
    lenient, plain = client.check_state(q), client.check_state(np.zeros(info.dof))
    assert (lenient.free, lenient.within_limits, lenient.contact) == (plain.free, plain.within_limits, plain.contact)
    # ... but each of the robot's joints is still required, and a column of a batch names a joint exactly.
    del q[info.joint_names[0]]
    e = _expect(InvalidArgumentError, grpc.StatusCode.INVALID_ARGUMENT, client.check_state, q)
    assert f"joint '{info.joint_names[0]}' is missing" in e.details
    names = list(info.joint_names)
    names[-1] = "elbow_typo"
    e = _expect(InvalidArgumentError, grpc.StatusCode.INVALID_ARGUMENT, client.check_states,
                np.zeros((5, info.dof)), joint_names=names)
    assert "elbow_typo" in e.details
    _expect(InvalidArgumentError, grpc.StatusCode.INVALID_ARGUMENT, client.check_state, "no_such_named_state")


def test_bad_requests_change_nothing(client: Client, info: SceneInfo, unchanged: None) -> None:
    # A malformed object (negative size), a duplicate id and an unknown id to move: rejected whole.
    _expect(InvalidArgumentError, grpc.StatusCode.INVALID_ARGUMENT, client.update_world,
            add=[geometry.collision_object("bad", [geometry.box((-1, 1, 1))])])
    _expect(InvalidArgumentError, grpc.StatusCode.INVALID_ARGUMENT, client.update_world,
            add=[geometry.collision_object("ok_box", [geometry.box((0.1, 0.1, 0.1))], at=(3, 3, 3)),
                 geometry.collision_object(info.object_ids[0], [geometry.sphere(0.1)])])
    with pytest.raises(ProximityError) as e:
        client.update_world(move={"no_such_object": (0, 0, 1)})
    assert e.value.code in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND)
    _expect(InvalidArgumentError, grpc.StatusCode.INVALID_ARGUMENT, client.create_scene, urdf="<robot name='x'>")
    _expect(InvalidArgumentError, grpc.StatusCode.INVALID_ARGUMENT, client.distance, np.zeros(info.dof), rel_err=-1)
    _expect(InvalidArgumentError, grpc.StatusCode.INVALID_ARGUMENT, client.check_motion, np.zeros(info.dof),
            np.ones(info.dof), mode="discrete", resolution=-0.1)


def _handled(daemon: support.Daemon, method: str) -> dict:
    """The server's handled-call counts of `method` by status code, codes normalised to lower case
    without underscores (Go spells them "DeadlineExceeded", "Canceled")."""
    samples = support.metric_samples(support.fetch(daemon.metrics_url))
    counts: dict = {}
    for s in samples.get("grpc_server_handled_total", []):
        if s.labels.get("grpc_method") == method:
            code = s.labels.get("grpc_code", "").replace("_", "").lower().replace("cancelled", "canceled")
            counts[code] = counts.get(code, 0) + s.value
    return counts


def _settled_handled(daemon: support.Daemon, method: str) -> dict:
    """_handled once the counts stop moving (the same for 0.3 s, within 10 s): calls whose deadline
    passed in an earlier step are counted when their handler returns, possibly after the client gave up."""
    last = _handled(daemon, method)
    give_up = time.monotonic() + 10.0
    while time.monotonic() < give_up:
        time.sleep(0.3)
        now = _handled(daemon, method)
        if now == last:
            return now
        last = now
    raise AssertionError(f"{method}'s call counts kept changing: {last}")


def test_expired_deadline_on_a_large_batch(daemon: support.Daemon, client: Client, info: SceneInfo,
                                           unchanged: None) -> None:
    states = info.sample(500_000, np.random.default_rng(3))
    _expect(DeadlineExceededError, grpc.StatusCode.DEADLINE_EXCEEDED, client.check_states, states, timeout=0.05)
    # A deadline that passes while the server is working on one big request (seconds of work, 0.3 s of
    # budget): the server itself gives up on it (its metrics count the call as stopped, never as OK),
    # and the next calls answer as before (the `unchanged` fixture). Counted from when the earlier calls
    # (this test's first, and earlier tests') are all counted.
    # The budget starts after the request has arrived: on a loaded machine sending and parsing 24 MB can
    # take longer than 0.3 s, and a call whose deadline passes in transit never reaches a handler (the
    # transport drops it; nothing would count it as stopped). A call to a scene that does not exist
    # times that part (the server answers once it has read the whole request).
    start = time.monotonic()
    with pytest.raises(NotFoundError):
        client.check_states(states, batch_size=500_000, scene="0" * 32, timeout=120)
    transit = time.monotonic() - start
    before = _settled_handled(daemon, "CheckStates")
    _expect(DeadlineExceededError, grpc.StatusCode.DEADLINE_EXCEEDED, client.check_states, states,
            batch_size=500_000, timeout=0.3 + 2 * transit)

    def stopped() -> float:
        now = _handled(daemon, "CheckStates")
        return sum(now.get(c, 0) - before.get(c, 0) for c in ("deadlineexceeded", "canceled"))

    assert support.eventually(lambda: stopped() == 1, timeout=60), "the server did not stop the batch at its deadline"
    assert _handled(daemon, "CheckStates").get("ok", 0) == before.get("ok", 0)


def _cancelled_streams(daemon: support.Daemon) -> float:
    """ValidatePaths calls the server counted as cancelled."""
    return _handled(daemon, "ValidatePaths").get("canceled", 0)


def test_cancelled_validate_paths_stream(daemon: support.Daemon, client: Client, info: SceneInfo,
                                         unchanged: None) -> None:
    before = _cancelled_streams(daemon)
    rng = np.random.default_rng(8)
    # Many long paths so that the stream is still running when it is cancelled.
    paths = [info.sample(40, rng) for _ in range(400)]
    stream = client.stream_paths(paths)
    got = 0
    with pytest.raises(CancelledError) as e:
        for _index, _result in stream:
            got += 1
            if got == 3:
                assert stream.cancel()
    assert e.value.code == grpc.StatusCode.CANCELLED
    assert got < len(paths)

    # The same through validate_paths: a callback that raises cancels the stream and propagates.
    class Stop(Exception):
        pass

    def stop(index: int, result: object) -> None:
        raise Stop()

    with pytest.raises(Stop):
        client.validate_paths(paths, progress=False, on_result=stop)

    # The server saw both cancellations (and stopped those streams).
    support.eventually(lambda: _cancelled_streams(daemon) >= before + 2)
    assert _cancelled_streams(daemon) == before + 2


@pytest.fixture(scope="module")
def limited() -> Iterator[support.Daemon]:
    """A second daemon with small limits: 1,000 states per batch and 256 KiB per message."""
    with support.Daemon("--max-batch-states", "1000", "--max-message-bytes", str(256 << 10)) as d:
        yield d


def test_oversize_batch_is_resource_exhausted(limited: support.Daemon, info: SceneInfo) -> None:
    with limited.client() as c:
        before = c.list_scenes()
        ok = c.check_states(info.sample(1000, np.random.default_rng(1)), batch_size=1000)
        assert ok.shape == (1000,)
        e = _expect(ResourceExhaustedError, grpc.StatusCode.RESOURCE_EXHAUSTED, c.check_states,
                    info.sample(1001, np.random.default_rng(1)), batch_size=5000)
        # The client's chunking keeps each request within the server's limit.
        assert c.check_states(info.sample(5000, np.random.default_rng(2)), batch_size=1000).shape == (5000,)
        # A message above the server's receive limit (256 KiB): rejected by gRPC before any work.
        big = [info.sample(700, np.random.default_rng(4)) for _ in range(10)]  # 10 * 700 * 6 * 8 B = 336 KB
        _expect(ResourceExhaustedError, grpc.StatusCode.RESOURCE_EXHAUSTED, c.validate_paths, big, progress=False)
        assert c.health() == "SERVING"
        assert support.same_scenes(c.list_scenes(), before)
        assert "1000" in e.details or "limit" in e.details.lower() or "max" in e.details.lower()
