"""The daemon's answers against the core's in-process answers (proximity-scene) on the same seeded random
states and motions of the built-in scene, and the batch and encoding paths against the single-call ones.

The in-process tool builds the same description (server/default_scene.cc) with core::Scene::Build and
calls CheckState / CheckMotion directly, so any disagreement is a conversion, encoding or routing bug in
the service or the client. Both CLEAR classes (free and colliding) must be well represented, so that a
daemon answering a constant cannot pass.
"""
from __future__ import annotations

import numpy as np
import pytest

import support
from proximity_client import Client, SceneInfo

N_STATES = 2000
N_MOTIONS = 240


@pytest.fixture(scope="module")
def states(info: SceneInfo) -> np.ndarray:
    rng = np.random.default_rng(20240611)
    q = info.sample(N_STATES, rng)
    # A few states slightly beyond the limits: CLEAR checks geometry and flags them, never clamps.
    q[:20, 1] = info.upper[1] + 0.05
    return q


@pytest.fixture(scope="module")
def tool_state_answers(states: np.ndarray) -> list:
    return support.tool_states(states)


@pytest.fixture(scope="module")
def motions(info: SceneInfo) -> "tuple[np.ndarray, np.ndarray]":
    return support.random_motions(np.random.default_rng(977), info.lower, info.upper, N_MOTIONS)


def test_scene_description_matches_the_core(info: SceneInfo) -> None:
    tool = support.run_scene_tool("info")
    assert info.robot_name == tool["robot"]
    assert info.joint_names == tool["joint_names"]
    assert info.dof == tool["dof"] == len(info.limits)
    for lim, lo, hi in zip(info.limits, tool["lower"], tool["upper"]):
        assert lim.lower == pytest.approx(lo, abs=1e-12) and lim.upper == pytest.approx(hi, abs=1e-12)
    assert set(info.object_ids) == set(tool["objects"])
    assert set(tool["links"]) <= set(info.link_names) | {"world"}


def test_check_state_equals_in_process(client: Client, states: np.ndarray, tool_state_answers: list) -> None:
    assert len(tool_state_answers) == N_STATES
    mismatches = []
    for i, (q, expect) in enumerate(zip(states, tool_state_answers)):
        r = client.check_state(q)
        got = (r.free, r.within_limits, support.contact_names(r.contact))
        want = (expect["free"], expect["within_limits"], support.contact_names(expect["contact"]))
        if got != want:
            mismatches.append((i, got, want))
    assert not mismatches, f"{len(mismatches)} of {N_STATES} states differ, first: {mismatches[:3]}"
    n_free = sum(a["free"] for a in tool_state_answers)
    # Meaningful only when both answers are common (the workcell is sized for that).
    assert 0.1 * N_STATES < n_free < 0.9 * N_STATES, n_free
    assert not any(a["within_limits"] for a in tool_state_answers[:20])


def test_check_states_equals_per_state_answers(client: Client, states: np.ndarray, tool_state_answers: list) -> None:
    expect_free = np.array([a["free"] for a in tool_state_answers])
    free = client.check_states(states)
    assert free.dtype == bool and free.shape == (N_STATES,)
    np.testing.assert_array_equal(free, expect_free)

    detailed = client.check_states(states, include_contacts=True)
    np.testing.assert_array_equal(detailed.free, expect_free)
    np.testing.assert_array_equal(detailed.within_limits, [a["within_limits"] for a in tool_state_answers])
    assert detailed.free_count == int(expect_free.sum())
    want_contacts = {i: support.contact_names(a["contact"]) for i, a in enumerate(tool_state_answers) if not a["free"]}
    got_contacts = {i: support.contact_names(p) for i, p in detailed.contacts.items()}
    assert got_contacts == want_contacts


def test_repeated_and_packed_encodings_agree(client: Client, states: np.ndarray) -> None:
    packed = client.check_states(states, encoding="packed")
    repeated = client.check_states(states, encoding="repeated")
    np.testing.assert_array_equal(packed, repeated)


def test_chunked_batches_agree(client: Client, states: np.ndarray) -> None:
    whole = client.check_states(states)
    for batch_size in (1, 7, 333, 1999):
        part = states[:400] if batch_size < 10 else states
        np.testing.assert_array_equal(client.check_states(part, batch_size=batch_size), whole[: len(part)])


def test_joint_names_reorder_columns(client: Client, info: SceneInfo, states: np.ndarray) -> None:
    perm = np.random.default_rng(5).permutation(info.dof)
    names = [info.joint_names[i] for i in perm]
    whole = client.check_states(states[:500])
    np.testing.assert_array_equal(client.check_states(states[:500, perm], joint_names=names), whole)
    for i in range(0, 500, 50):
        as_dict = {info.joint_names[j]: float(states[i, j]) for j in perm}
        assert client.check_state(as_dict).free == whole[i]


def test_certified_motions_equal_in_process(client: Client, motions: "tuple[np.ndarray, np.ndarray]") -> None:
    q0, q1 = motions
    expect = support.tool_motions(q0, q1, "certified")
    mismatches = []
    for i in range(len(q0)):
        r = client.check_motion(q0[i], q1[i])
        e = expect[i]
        same = (r.free == e["free"] and r.undecided == e["undecided"]
                and support.contact_names(r.contact) == support.contact_names(e["contact"])
                and abs(r.t_free - e["t_free"]) <= 1e-12
                and (r.free or abs(r.t_collide - e["t_collide"]) <= 1e-12))
        if not same:
            mismatches.append((i, r, e))
    assert not mismatches, f"{len(mismatches)} of {len(q0)} motions differ, first: {mismatches[:2]}"
    n_free = sum(e["free"] for e in expect)
    assert 0.1 * len(q0) < n_free < 0.9 * len(q0), n_free


@pytest.mark.parametrize("resolution", [0.05, 0.01])
def test_discrete_motions_equal_in_process(client: Client, motions: "tuple[np.ndarray, np.ndarray]",
                                           resolution: float) -> None:
    q0, q1 = motions
    q0, q1 = q0[:120], q1[:120]
    expect = support.tool_motions(q0, q1, "discrete", resolution)
    for i in range(len(q0)):
        r = client.check_motion(q0[i], q1[i], mode="discrete", resolution=resolution)
        e = expect[i]
        assert r.free == e["free"], i
        assert r.t_free == pytest.approx(e["t_free"], abs=1e-12)
        if not r.free:
            assert r.t_collide == pytest.approx(e["t_collide"], abs=1e-12)
            assert support.contact_names(r.contact) == support.contact_names(e["contact"])


def test_certified_never_free_where_sampling_finds_a_collision(client: Client,
                                                              motions: "tuple[np.ndarray, np.ndarray]") -> None:
    """Soundness, independent of the tool: a motion LINK certifies free has no colliding sample."""
    q0, q1 = motions
    certified_free = 0
    for i in range(len(q0)):
        if not client.check_motion(q0[i], q1[i]).free:
            continue
        certified_free += 1
        t = np.linspace(0.0, 1.0, 201)[:, None]
        samples = q0[i] + t * (q1[i] - q0[i])
        assert client.check_states(samples).all(), f"motion {i}: certified free, but a sample collides"
    assert certified_free > 0


def test_motion_answers_are_consistent_with_clear(client: Client, motions: "tuple[np.ndarray, np.ndarray]") -> None:
    """Not free: the state at t_collide collides (with the contact reported) and the start is free when
    t_free > 0."""
    q0, q1 = motions
    for i in range(0, len(q0), 3):
        for mode in ("certified", "discrete"):
            r = client.check_motion(q0[i], q1[i], mode=mode)
            if r.free:
                assert r.t_free == pytest.approx(1.0) and r.contact is None
                continue
            assert 0.0 <= r.t_free <= r.t_collide <= 1.0
            if not r.undecided:
                at = client.check_state(q0[i] + r.t_collide * (q1[i] - q0[i]))
                assert not at.free, (i, mode)
                assert support.contact_names(at.contact) == support.contact_names(r.contact)
