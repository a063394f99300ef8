"""Clearance tracking (``Session.track``, ``Session.track_stream``, ``Client.track``) against a real
proximityd.

Oracles: the unary calls of the same client. A frame's nearest upper bound is ComputeDistance's exact
upper bound; each reported pair's interval holds ComputeSignedDistance's exact distance of that pair;
each pair's gradient equals central differences of that exact distance, joint by joint, wherever the
pair's closest features stay the same over the difference; the pairs left out are no nearer than the
pairs reported. ``track_stream`` answers one frame per state, and equals ``track`` state by state;
``Client.track`` keeps one session per scene (the daemon's metrics count one Session call), warm along
small steps, and opens another when the last ended. Bad arguments raise the error naming the field and
the session goes on, its tracker unchanged.
"""
from __future__ import annotations

import time
from typing import Dict, List, Tuple

import numpy as np
import pytest

import support
from proximity_client import (Client, InvalidArgumentError, SceneInfo, TrackedPair, TrackResult)

#: Central differences: the step (rad) and the tolerance on each gradient component (metres per rad).
STEP = 1e-5
TOLERANCE = 1e-6
#: Pairs with a curved side (the post is a cylinder): GJK's distance is certified to a tolerance, not
#: exact to rounding, so its differences are looser.
CURVED_TOLERANCE = 1e-4
CURVED = {"post"}


def _free_states(client: Client, info: SceneInfo, rng: np.random.Generator, n: int) -> np.ndarray:
    states = info.sample(20 * n, rng)
    free = client.check_states(states)
    out = states[free][:n]
    assert len(out) == n
    return out


def _sessions_started(daemon: support.Daemon) -> float:
    samples = support.metric_samples(support.fetch(daemon.metrics_url))
    return sum(s.value for s in samples.get("grpc_server_started_total", []) if s.labels.get("grpc_method") == "Session")


def _key(p: TrackedPair) -> Tuple[str, str]:
    return p.pair.robot, p.pair.other


def test_nearest_upper_is_the_unary_distance_and_pairs_hold_their_exact_distance(
        client: Client, info: SceneInfo, rng: np.random.Generator) -> None:
    states = np.vstack([_free_states(client, info, rng, 25), info.sample(15, rng)])  # free and colliding
    compared = colliding = 0
    with client.session() as s:
        for k, q in enumerate(states):
            t = s.track(q, horizon=2.0, max_pairs=64)
            d = client.distance(q)
            assert t.pairs, f"state {k}: something is within 2 m"
            assert t.within_limits == d.within_limits
            # The same exact distance by both routes.
            assert t.upper == d.upper, f"state {k}: track {t.upper!r} vs distance {d.upper!r}"
            assert t.lower <= d.upper and d.lower <= t.upper
            assert [p.upper for p in t.pairs] == sorted(p.upper for p in t.pairs)
            colliding += d.lower == 0.0
            for p in t.pairs:
                assert p.lower <= p.upper
                assert abs(np.linalg.norm(p.normal) - 1.0) < 1e-12
                assert p.gradient.shape == (info.dof,)
                assert p.method in ("vclip", "gjk", "walk")
                sd = client.signed_distance(p.pair.robot, p.pair.other, q)
                exact = max(0.0, sd.distance)  # padding is 0 in the default scene
                assert p.lower - 1e-12 <= exact <= p.upper + 1e-12, f"state {k}: {p.pair}: {exact} vs {p}"
                if exact > 0:
                    assert np.linalg.norm(p.point_robot - p.point_other) == pytest.approx(p.upper, abs=1e-9)
                compared += 1
    assert compared > 200
    assert 0 < colliding < len(states)


def test_gradients_equal_central_differences_of_the_exact_distance(
        client: Client, info: SceneInfo, rng: np.random.Generator) -> None:
    states = _free_states(client, info, rng, 12)
    checked = skipped = 0
    worst = 0.0
    with client.session() as s, client.session() as probe:
        for q in states:
            frame = s.track(q, max_pairs=4, horizon=0.5)
            for p in frame.pairs:
                tol = CURVED_TOLERANCE if p.pair.other in CURVED or p.method == "gjk" else TOLERANCE
                for j in range(info.dof):
                    ends = []
                    for sign in (1.0, -1.0):
                        qj = q.copy()
                        qj[j] += sign * STEP
                        # The pair's closest features at q + h and q - h, from a tracker of its own.
                        near = {_key(x): x for x in probe.track(qj, max_pairs=4096, horizon=0.5).pairs}
                        ends.append((near.get(_key(p)), client.signed_distance(p.pair.robot, p.pair.other, qj)))
                    if any(x is None or (x.feature_robot, x.feature_other) != (p.feature_robot, p.feature_other)
                           for x, _ in ends):
                        skipped += 1
                        continue
                    difference = (ends[0][1].distance - ends[1][1].distance) / (2 * STEP)
                    error = abs(difference - p.gradient[j])
                    assert error <= tol, (f"{p.pair} joint {info.joint_names[j]}: gradient {p.gradient[j]!r}, "
                                          f"central difference {difference!r}")
                    if tol == TOLERANCE:
                        worst = max(worst, error)
                    checked += 1
    print(f"gradients: {checked} components checked (worst {worst:.2e}), {skipped} skipped (features changed)")
    assert checked > 100 and skipped < checked


def test_reported_pairs_are_the_nearest(client: Client, info: SceneInfo, rng: np.random.Generator) -> None:
    # The k nearest: every pair left out is no nearer than the k-th reported (all pairs within the horizon
    # come from a query with room for them all).
    with client.session() as s:
        for q in _free_states(client, info, rng, 15):
            every = s.track(q, max_pairs=4096, horizon=0.4)
            few = s.track(q, max_pairs=3, horizon=0.4)
            assert len(few.pairs) == min(3, len(every.pairs))
            uppers = sorted(p.upper for p in every.pairs)
            assert [p.upper for p in few.pairs] == pytest.approx(uppers[:3], abs=1e-12)
            # Per link: each robot link's nearest pair (a self pair counts for both of its links).
            def nearest_per_link(frame: TrackResult) -> Dict[str, float]:
                links: Dict[str, float] = {}
                for p in frame.pairs:
                    for link in {p.pair.link, p.pair.other_link if p.pair.self_collision else ""} - {""}:
                        links[link] = min(links.get(link, np.inf), p.upper)
                return links
            per_link = nearest_per_link(s.track(q, max_pairs=1, per_link=True, horizon=0.4))
            assert per_link == pytest.approx(nearest_per_link(every), abs=1e-12)
            # Options reach the server: world pairs only, self pairs only.
            assert all(not p.pair.self_collision for p in s.track(q, self_pairs=False, max_pairs=64).pairs)
            assert all(p.pair.self_collision for p in s.track(q, world=False, max_pairs=64).pairs)
            assert all(p.gradient.shape == (0,) for p in s.track(q, gradient=False).pairs)


def test_track_stream_yields_one_warm_frame_per_state(client: Client, info: SceneInfo,
                                                      rng: np.random.Generator) -> None:
    a = _free_states(client, info, rng, 1)[0]
    direction = rng.uniform(-1.0, 1.0, info.dof)
    states = [a + 1e-3 * k * direction for k in range(120)]
    with client.session() as s:
        before = s.round_trips
        frames = list(s.track_stream(states, max_pairs=6, horizon=0.5))
        assert s.round_trips - before == len(states)
    assert len(frames) == len(states) and all(isinstance(f, TrackResult) for f in frames)
    # The same as one track query per state on a session of its own (exactly: the same warm starts), and
    # as a cold session's (up to rounding: a walk from another start may round the last bit otherwise).
    with client.session() as one, client.session(cold_caches=True) as cold:
        for k, (q, f) in enumerate(zip(states, frames)):
            same = one.track(q, max_pairs=6, horizon=0.5)
            assert [(p.pair, p.lower, p.upper) for p in same.pairs] == [(p.pair, p.lower, p.upper) for p in f.pairs], k
            other = cold.track(q, max_pairs=6, horizon=0.5)
            assert [p.pair for p in other.pairs] == [p.pair for p in f.pairs], k
            for p, w in zip(other.pairs, f.pairs):
                assert (p.lower, p.upper) == pytest.approx((w.lower, w.upper), rel=1e-12, abs=1e-12), k
    # Warm: after the first frame, the pairs keep their features along 1e-3 steps.
    kept = sum(f.same_features for f in frames[1:])
    total = sum(len(f.pairs) for f in frames[1:])
    assert frames[0].same_features == 0
    assert total > 100 and kept > 0.7 * total, (kept, total)


def test_client_track_keeps_one_warm_session_per_scene(daemon: support.Daemon, info: SceneInfo,
                                                        rng: np.random.Generator) -> None:
    with daemon.client() as c:
        a = _free_states(c, info, rng, 1)[0]
        direction = rng.uniform(-1.0, 1.0, info.dof)
        started, handled = _sessions_started(daemon), _sessions_handled_ok(daemon)
        frames = [c.track(a + 1e-3 * k * direction, max_pairs=6) for k in range(60)]
        # A bad call in between: its error, and the session goes on.
        with pytest.raises(InvalidArgumentError, match=r"queries\[0\]\.track\.horizon"):
            c.track(a, horizon=-1.0)
        frames.append(c.track(a + 1e-3 * 60 * direction, max_pairs=6))
        assert _sessions_started(daemon) - started == 1, "one session for every call on one scene"
        assert frames[0].same_features == 0
        warm = [f for f in frames[1:] if f.pairs]
        assert warm and all(f.same_features > 0 for f in warm), "small steps keep features"
        assert frames[-1].same_features > 0, "the bad call left the tracker as it was"
        # Another scene (the same content under a name) gets its own session.
        c.name_scene("track-test", scene=info.scene_id, reassign=True)
        c.track(a, scene="track-test")
        c.track(a, scene="track-test")
        assert _sessions_started(daemon) - started == 2
        # The answers are a session's answers.
        with c.session() as s:
            mine, kept = s.track(a), c.track(a)
            assert [p.pair for p in mine.pairs] == [p.pair for p in kept.pairs]
            assert [p.upper for p in mine.pairs] == pytest.approx([p.upper for p in kept.pairs], rel=1e-12, abs=1e-12)
        assert _sessions_started(daemon) - started == 3
        # end_track closes a scene's session (twice is harmless); the bound on kept sessions closes the least
        # recently tracked scene's.
        c.end_track("track-test")
        c.end_track("track-test")
        assert support.eventually(lambda: _sessions_handled_ok(daemon) - handled == 2, 10)
        c.TRACK_SESSIONS = 1
        c.track(a, scene="track-test")  # opens one, closes the default scene's
        assert support.eventually(lambda: _sessions_handled_ok(daemon) - handled == 3, 10)
        assert c.track(a).same_features == 0, "the default scene's session was closed: a new one, cold"
        assert _sessions_started(daemon) - started == 5
    # close() ended the last kept session, OK.
    assert support.eventually(lambda: _sessions_handled_ok(daemon) - handled == 5, 10)


def _sessions_handled_ok(daemon: support.Daemon) -> float:
    samples = support.metric_samples(support.fetch(daemon.metrics_url))
    return sum(s.value for s in samples.get("grpc_server_handled_total", [])
               if s.labels.get("grpc_method") == "Session" and s.labels.get("grpc_code") == "OK")


def test_client_track_opens_another_session_when_the_last_ended(info: SceneInfo, rng: np.random.Generator) -> None:
    # A daemon that ends every call after a second: the session Client.track keeps ends between calls,
    # and the next call opens another (its first frame cold) instead of failing.
    with support.Daemon("--max-call-seconds", "1") as d, d.client() as c:
        c.wait_until_serving()
        q = _free_states(c, info, rng, 1)[0]
        first, second = c.track(q), c.track(q)
        assert second.same_features == len(second.pairs) > 0
        time.sleep(1.5)
        again = c.track(q)
        assert again.same_features == 0, "a new session starts cold"
        assert [(p.pair, p.upper) for p in again.pairs] == [(p.pair, p.upper) for p in first.pairs]
        assert _sessions_started(d) == 2


def test_bad_arguments_name_the_field_and_the_session_goes_on(client: Client, info: SceneInfo,
                                                              rng: np.random.Generator) -> None:
    q = _free_states(client, info, rng, 1)[0]
    bad: List[Tuple[dict, str]] = [
        (dict(horizon=float("nan")), r"queries\[0\]\.track\.horizon: must be finite"),
        (dict(horizon=-0.1), r"queries\[0\]\.track\.horizon"),
        (dict(horizon=1e5), r"queries\[0\]\.track\.horizon: .*got 1e\+05"),
        (dict(max_pairs=5000), r"queries\[0\]\.track\.max_pairs: at most 4096"),
        (dict(rel_err=-0.5), r"queries\[0\]\.track\.rel_err"),
        (dict(abs_err=float("inf")), r"queries\[0\]\.track\.abs_err"),
    ]
    with client.session() as s:
        first = s.track(q)
        for kwargs, pattern in bad:
            with pytest.raises(InvalidArgumentError, match=pattern):
                s.track(q, **kwargs)
        with pytest.raises(InvalidArgumentError, match=r"queries\[0\]\.track\.state.*expected 6 values.*got 5"):
            s.track(q[:5])
        with pytest.raises(InvalidArgumentError, match=r"queries\[0\]\.track\.state.*not finite"):
            s.track(np.where(np.arange(info.dof) == 2, np.nan, q))
        # A joint the robot lacks is ignored (as MoveIt does), but one it has may not be missing.
        names = dict(zip(info.joint_names, q))
        names["no_such_joint"] = names.pop(info.joint_names[0])
        with pytest.raises(InvalidArgumentError, match=r"queries\[0\]\.track\.state.*" + info.joint_names[0]):
            s.track(names)
        with pytest.raises(ValueError, match="max_pairs must be >= 0"):
            s.track(q, max_pairs=-1)
        with pytest.raises(ValueError, match="convex must be"):
            s.track(q, convex="sat")
        # The session goes on, and its tracker was untouched: the same state is warm.
        again = s.track(q)
        assert again.same_features == len(again.pairs) > 0
        assert [p.pair for p in again.pairs] == [p.pair for p in first.pairs]
        assert [p.upper for p in again.pairs] == pytest.approx([p.upper for p in first.pairs], rel=1e-12, abs=1e-12)
        # GJK for convex polyhedra gives the same intervals.
        gjk = s.track(q, convex="gjk")
        assert [p.pair for p in gjk.pairs] == [p.pair for p in first.pairs]
        assert [p.upper for p in gjk.pairs] == pytest.approx([p.upper for p in first.pairs], abs=1e-9)
