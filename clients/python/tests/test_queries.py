"""Distance, time of first contact, path checks and streamed path validation.

Independent answers come from geometric facts constructed here and from relations between queries:

* the clearance to a solid sphere of radius r centred at c is the distance to c minus r, so two scenes
  that differ only in r give clearances that differ by exactly the difference in r; padding p lowers a
  world clearance by p;
* the witness points realise the upper bound, and the obstacle's point lies on the sphere's surface;
* a free-flying sphere of radius r moving straight at a wall's face touches it where its centre is r
  from the face: t* = (distance travelled to that point) / (path length);
* a path's first non-free segment is the first segment that check_motion says is not free;
* conservative advancement certifies [0, t_contact) free, so t_contact <= LINK's t_collide.
"""
from __future__ import annotations

import numpy as np
import pytest

import support
from proximity_client import Client, SceneInfo, geometry

CENTRE = (1.2, 0.3, 0.6)  # well outside the KR5's reach from its base at the origin


def _sphere_scene(client: Client, radius: float, padding: float = 0.0) -> SceneInfo:
    return client.create_scene(urdf_path=support.KR5_URDF, padding=padding,
                               objects=[geometry.collision_object("ball", [geometry.sphere(radius)], at=CENTRE)])


def test_distance_to_a_sphere_follows_its_radius(client: Client, info: SceneInfo) -> None:
    small, large = _sphere_scene(client, 0.1), _sphere_scene(client, 0.25)
    padded = _sphere_scene(client, 0.1, padding=0.05)
    rng = np.random.default_rng(31)
    checked = 0
    for q in info.sample(40, rng):
        a = client.distance(q, exclude_self=True, scene=small.scene_id)
        if a.lower < 0.3:  # keep states where the large sphere and the padding do not touch the arm
            continue
        b = client.distance(q, exclude_self=True, scene=large.scene_id)
        p = client.distance(q, exclude_self=True, scene=padded.scene_id)
        assert a.lower == pytest.approx(a.upper, abs=1e-9), "rel_err = abs_err = 0 is exact"
        assert a.upper - b.upper == pytest.approx(0.15, abs=1e-7)
        assert a.upper - p.upper == pytest.approx(0.05, abs=1e-7)
        n = a.nearest
        assert n.pair is not None and n.pair.other == "ball" and not n.pair.self_collision
        assert np.linalg.norm(n.point_robot - n.point_other) == pytest.approx(a.upper, abs=1e-7)
        assert np.linalg.norm(n.point_other - np.array(CENTRE)) == pytest.approx(0.1, abs=1e-7)
        checked += 1
    assert checked >= 10
    for s in (small, large, padded):
        client.delete_scene(s.scene_id)


def test_distance_agrees_with_clear_and_budgets(client: Client, info: SceneInfo) -> None:
    rng = np.random.default_rng(32)
    states = info.sample(150, rng)
    free = client.check_states(states)
    for q, is_free in zip(states, free):
        exact = client.distance(q)
        assert exact.lower <= exact.upper + 1e-12
        if not is_free:
            assert exact.lower == 0.0
            continue
        assert exact.upper > 0.0
        approx = client.distance(q, rel_err=0.2)
        assert approx.lower <= exact.upper + 1e-9 and exact.lower <= approx.upper + 1e-9
        assert approx.upper <= 1.2 * approx.lower + 1e-9
        if exact.lower > 0.02:
            capped = client.distance(q, max_distance=0.01)
            assert capped.beyond_max_distance and capped.lower >= 0.01 - 1e-12
    q = states[np.argmax(free)]
    per = client.distance(q, per_pair=True)
    assert per.pairs and min(p.upper for p in per.pairs) == pytest.approx(per.upper, abs=1e-9)


def test_body_time_of_first_contact_against_a_wall(client: Client) -> None:
    wall_x, half = 1.5, 0.025
    s = client.create_scene(urdf_path=support.KR5_URDF, objects=[
        geometry.collision_object("wall", [geometry.box((2 * half, 2.0, 2.0))], at=(wall_x, 0.0, 0.5))])
    r = 0.1
    start, goal = (3.0, 0.0, 0.5), (1.0, 0.0, 0.5)
    hit = client.body_time_of_first_contact([geometry.sphere(r)], start, goal, tolerance=1e-6, scene=s.scene_id)
    t_star = (start[0] - (wall_x + half + r)) / (start[0] - goal[0])
    assert hit.contact and not hit.undecided
    assert hit.t_contact == pytest.approx(t_star, abs=2e-6)
    assert hit.t_contact <= t_star + 1e-9, "[0, t_contact) must be certified free"
    assert hit.nearest.pair is None or hit.nearest.pair.other == "wall"
    miss = client.body_time_of_first_contact([geometry.sphere(r)], (3.0, 3.0, 0.5), (3.0, -3.0, 0.5),
                                             scene=s.scene_id)
    assert not miss.contact and miss.t_contact == 1.0
    client.delete_scene(s.scene_id)


def test_joint_time_of_first_contact_agrees_with_link(client: Client, info: SceneInfo) -> None:
    q0, q1 = support.random_motions(np.random.default_rng(33), info.lower, info.upper, 60)
    contacts = 0
    for a, b in zip(q0, q1):
        if not client.check_state(a).free:
            continue
        link = client.check_motion(a, b)
        toi = client.time_of_first_contact(a, b)
        if not link.free and not link.undecided:
            contacts += 1
            assert toi.contact and toi.t_contact <= link.t_collide + 1e-9
        if not toi.contact:
            assert link.free
        # Everything before t_contact is certified free: spot-check states there.
        for t in np.linspace(0.0, toi.t_contact, 5, endpoint=False):
            assert client.check_state(a + t * (b - a)).free
    assert contacts > 0


def test_check_path_is_its_first_bad_segment(client: Client, info: SceneInfo) -> None:
    rng = np.random.default_rng(34)
    for _ in range(25):
        n = int(rng.integers(2, 7))
        w = info.sample(n, rng)
        path = client.check_path(w)
        segs = [client.check_motion(w[i], w[i + 1]) for i in range(n - 1)]
        first_bad = next((i for i, s in enumerate(segs) if not s.free), -1)
        assert path.segment == first_bad and path.free == (first_bad == -1)
        if first_bad >= 0:
            m, e = path.motion, segs[first_bad]
            assert (m.t_free, m.t_collide, support.contact_names(m.contact)) == \
                (e.t_free, e.t_collide, support.contact_names(e.contact))
    single = client.check_path(np.zeros((1, info.dof)))
    assert single.free and single.segment == -1


def test_validate_paths_returns_request_order(client: Client, info: SceneInfo) -> None:
    rng = np.random.default_rng(35)
    paths = []
    for i in range(60):
        w = info.sample(int(rng.integers(2, 6)), rng)
        if i % 3 == 0:  # short local paths: often free
            w = np.clip(w[0] + rng.uniform(-0.15, 0.15, w.shape), info.lower, info.upper)
        paths.append(w)
    seen = []
    results = client.validate_paths(paths, progress=False, on_result=lambda i, r: seen.append(i))
    assert sorted(seen) == list(range(len(paths)))
    for w, r in zip(paths, results):
        single = client.check_path(w)
        assert (r.free, r.segment, r.motion.t_collide) == (single.free, single.segment, single.motion.t_collide)
    assert 0 < sum(r.free for r in results) < len(paths)
    # Discrete mode and joint names: permuted columns give the same answers.
    perm = np.arange(info.dof)[::-1]
    names = [info.joint_names[i] for i in perm]
    a = client.validate_paths(paths[:20], mode="discrete", resolution=0.02, progress=False)
    b = client.validate_paths([{"joint_names": names, "waypoints": p[:, perm]} for p in paths[:20]],
                              mode="discrete", resolution=0.02, progress=False)
    assert [(x.free, x.segment) for x in a] == [(x.free, x.segment) for x in b]
