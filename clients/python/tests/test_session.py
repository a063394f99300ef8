"""Query sessions (``Client.session``) against a real proximityd.

Answers are checked against the unary calls of the same client (the session is the same query without
the per-call setup): CLEAR, certified and discrete LINK with t_free, distance intervals, warm and cold;
a lazy planner's edge batch with ``until_invalid`` is the prefix of the one-by-one answers up to the first
edge that is not free. Bad queries raise the unary call's error for that query and the session goes on;
protocol violations (a session on an unknown scene, an oversize batch) and the deadline end the stream.
"""
from __future__ import annotations

import math
import threading

import numpy as np
import pytest

import support
from proximity_client import (Client, DeadlineExceededError, InvalidArgumentError, NotFoundError,
                              ResourceExhaustedError, SceneInfo)
from proximity_client._stubs import pb


def _edges(rng: np.random.Generator, info: SceneInfo, n: int, step: float = 0.3):
    q0 = info.sample(n, rng)
    q1 = q0 + step * (info.sample(n, rng) - q0)
    return list(zip(q0, q1))


def test_session_answers_equal_the_unary_calls(client: Client, info: SceneInfo, rng: np.random.Generator) -> None:
    states = info.sample(60, rng)
    edges = _edges(rng, info, 40)
    with client.session() as s:
        free = s.check_states(states)
        motions = s.check_motions(edges)
        discrete = s.check_motions(edges[:10], mode="discrete", resolution=0.05)
        distances = s.distances(states[:20], rel_err=0.05)
        single = s.check_state(states[0])
        assert s.round_trips == 5
        assert s.scene_id == info.scene_id and s.dof == info.dof
        assert s.max_batch == 4096
    expected_free = client.check_states(states)
    assert free.dtype == bool and np.array_equal(free, expected_free)
    assert 0 < free.sum() < len(free), "both free and colliding states are compared"
    assert single.free == client.check_state(states[0]).free
    colliding = 0
    for (a, b), m in zip(edges, motions):
        u = client.check_motion(a, b)
        # Answers, not work: how many states a certified check poses depends on the map cells the
        # daemon has settled by then.
        assert (m.free, m.t_free, m.t_collide, m.undecided) == (u.free, u.t_free, u.t_collide, u.undecided)
        colliding += not u.free
    assert 0 < colliding < len(edges)
    for (a, b), m in zip(edges[:10], discrete):
        u = client.check_motion(a, b, mode="discrete", resolution=0.05)
        assert (m.free, m.t_free) == (u.free, u.t_free)
    for q, d in zip(states[:20], distances):
        u = client.distance(q, rel_err=0.05)
        assert (d.lower, d.upper) == (u.lower, u.upper)


def test_warm_and_cold_sessions_agree_along_a_trajectory(client: Client, info: SceneInfo,
                                                         rng: np.random.Generator) -> None:
    a, b = info.sample(2, rng)
    track = [a + t * (b - a) for t in np.linspace(0.0, 1.0, 60)]
    with client.session() as warm, client.session(cold_caches=True) as cold:
        w = warm.distances(track, rel_err=0.02)
        c = cold.distances(track, rel_err=0.02)
    for k, (x, y) in enumerate(zip(w, c)):
        assert (x.lower, x.upper) == (y.lower, y.upper), k
        assert x.lower <= x.upper


def test_until_invalid_answers_up_to_the_first_edge_that_is_not_free(client: Client, info: SceneInfo,
                                                                      rng: np.random.Generator) -> None:
    edges = _edges(rng, info, 200, step=0.2)
    one_by_one = [client.check_motion(a, b) for a, b in edges]
    first = next(i for i, m in enumerate(one_by_one) if not m.free)
    with client.session() as s:
        prefix = s.check_motions(edges, until_invalid=True)
        everything = s.check_motions(edges)
    assert len(prefix) == first + 1
    assert [m.t_free for m in prefix] == [m.t_free for m in one_by_one[:first + 1]]
    assert len(everything) == len(edges)


def test_chains_stop_each_at_its_own_first_invalid_query(client: Client, info: SceneInfo,
                                                        rng: np.random.Generator) -> None:
    # Chains of a planner's steps: per step its state, then the edge to it; each chain answered up to its
    # first query that is not free, as asking one by one would.
    queries, chains, expected = [], [], []
    for c in range(40):
        q = info.sample(1, rng)[0]
        length = 1 + c % 3
        for _ in range(length):
            nxt = q + 0.3 * (info.sample(1, rng)[0] - q)
            queries.append(pb.SessionQuery(id=len(queries), state=pb.CheckStateRequest(
                state=pb.JointPositions(positions=nxt.tolist()))))
            queries.append(pb.SessionQuery(id=len(queries), motion=pb.CheckMotionRequest(
                start=pb.JointPositions(positions=q.tolist()), goal=pb.JointPositions(positions=nxt.tolist()))))
            q = nxt
        chains.append(2 * length)
    first, answered, complete = 0, [], []  # per chain: its answers' ids, whether it held to its end
    for length in chains:
        answered.append([])
        for k in range(first, first + length):
            answered[-1].append(k)
            query = queries[k]
            if k % 2 == 0:
                state = client.check_state(np.array(query.state.state.positions))
                free = state.free and state.within_limits
            else:
                free = client.check_motion(np.array(query.motion.start.positions),
                                           np.array(query.motion.goal.positions)).free
            if not free:
                break
        complete.append(free)
        expected.extend(answered[-1])
        first += length
    assert len(expected) < len(queries), "no chain stopped early"
    with client.session() as s:
        answers = s.run(queries, until_invalid=True, chains=chains)
    assert [a.id for a in answers] == expected
    # Each odd chain after the chain before it (counted from 1): answered only when that one held.
    after = [c if c % 2 == 1 else 0 for c in range(len(chains))]
    ordered = [k for c in range(len(chains)) if after[c] == 0 or complete[after[c] - 1] for k in answered[c]]
    assert len(ordered) < len(expected), "no chain skipped"
    with client.session() as s:
        answers = s.run(queries, until_invalid=True, chains=chains, after=after)
    assert [a.id for a in answers] == ordered


def test_bad_queries_raise_their_error_and_the_session_goes_on(client: Client, info: SceneInfo) -> None:
    home = np.zeros(info.dof)
    with client.session() as s:
        with pytest.raises(InvalidArgumentError, match=rf"queries\[0\]\.state\.state.*expected {info.dof}"):
            s.check_state(home[:-1])
        with pytest.raises(InvalidArgumentError, match=r"queries\[0\]\.motion\.goal.*not finite"):
            s.check_motion(home, np.full(info.dof, math.nan))
        with pytest.raises(InvalidArgumentError, match=r"queries\[0\]\.motion\.resolution"):
            s.check_motions([(home, home), (home, home)], mode="discrete", resolution=-1.0)
        # A query of no known kind (as a newer client's would look to this server).
        answers = s.run([pb.SessionQuery(id=7), pb.SessionQuery(id=8, state=pb.CheckStateRequest(
            state=pb.JointPositions(positions=home.tolist())))])
        assert [a.id for a in answers] == [7, 8]
        assert answers[0].error.code == 3 and "queries[0].query" in answers[0].error.message
        assert answers[1].state.free
        assert s.check_state(home).free, "the session goes on after error answers"


def test_protocol_violations_and_the_deadline_end_the_session(client: Client, daemon: support.Daemon,
                                                              info: SceneInfo) -> None:
    home = np.zeros(info.dof)
    with client.session(scene="no-such-scene") as s:
        with pytest.raises(NotFoundError, match="no-such-scene"):
            s.check_state(home)
    s = client.session()
    with pytest.raises(ResourceExhaustedError, match="--max-session-batch"):
        s.check_states(np.zeros((5000, info.dof)))
    with pytest.raises(Exception, match="closed"):
        s.check_state(home)
    s.close()
    with client.session(timeout=0.5) as s:
        assert s.check_state(home).free
        threading.Event().wait(0.8)
        with pytest.raises(DeadlineExceededError):
            s.check_state(home)
    assert client.check_state(home).free, "the server keeps serving"


def test_a_session_on_a_scene_the_server_lost_is_opened_again_after_the_client_resends_it(
        daemon: support.Daemon, rng: np.random.Generator) -> None:
    """As unary calls: the server answers NOT_FOUND at open for one of the client's scenes that it no
    longer holds (here deleted by another client; a restarted or another replica alike), the client sends
    the scene again and opens the session again, and the answers equal the ones before the loss."""
    from proximity_client import geometry
    wall = geometry.collision_object("wall", [geometry.box((0.05, 2.0, 2.0))], at=(0.5, 0.0, 0.5))
    with daemon.client() as c, daemon.client() as other:
        scene = c.create_scene_from_files(support.KR5_URDF, objects=[wall])
        info = c.get_scene(scene.scene_id)
        states = info.sample(200, rng)
        edges = _edges(rng, info, 6, step=1.0)
        expect = c.check_states(states, scene=scene.scene_id)
        assert 0 < int(expect.sum()) < len(expect)
        expect_motions = [c.check_motion(a, b, scene=scene.scene_id) for a, b in edges]
        other.delete_scene(scene.scene_id)
        assert scene.scene_id not in {s.scene_id for s in other.list_scenes()}
        restores = c.scene_restores
        with c.session(scene=scene.scene_id) as s:
            np.testing.assert_array_equal(s.check_states(states), expect)
            for (a, b), e in zip(edges, expect_motions):
                r = s.check_motion(a, b)
                assert (r.free, r.t_free, r.t_collide) == (e.free, e.t_free, e.t_collide)
            assert s.reopened == 1 and s.scene_id == scene.scene_id
        assert c.scene_restores == restores + 1
        assert scene.scene_id in {s.scene_id for s in other.list_scenes()}
        # Without auto_restore, or for a scene another client made, the NOT_FOUND reaches the caller.
        other.delete_scene(scene.scene_id)
        c.auto_restore = False
        with c.session(scene=scene.scene_id) as s:
            with pytest.raises(NotFoundError, match=scene.scene_id):
                s.check_state(states[0])
        c.auto_restore = True
        ball = geometry.collision_object("ball", [geometry.sphere(0.15)], at=(0.3, 0.3, 0.9))
        mine = other.create_scene_from_files(support.KR5_URDF, objects=[ball])
        assert not c.owns_scene(mine.scene_id)
        other.delete_scene(mine.scene_id)
        with c.session(scene=mine.scene_id) as s:
            with pytest.raises(NotFoundError):
                s.check_state(states[0])
