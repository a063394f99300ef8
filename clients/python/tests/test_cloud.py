"""Point clouds in the world (``geometry.point_cloud``, ``update_world(add=..., replace=...)``) against a
real proximityd.

Oracle: a cloud kept unfiltered (``voxel_size=0``) is exactly the union of spheres of its radius at its
points, so the daemon must answer CLEAR and distance(q) on it as on the same points sent as sphere
objects, a different path through the daemon (GJK against primitives). A cloud in a link frame equals the
same points posed in the world by ``link_poses``. The self filter drops points on the robot's own links.
Bad clouds are refused naming the field, and the scene is unchanged.
"""
from __future__ import annotations

import numpy as np
import pytest

import support
from proximity_client import Client, InvalidArgumentError, ResourceExhaustedError, SceneInfo, geometry

RADIUS = 0.02


def _quat_matrix(q: np.ndarray) -> np.ndarray:
    x, y, z, w = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def _points_near_robot(rng: np.random.Generator, n: int) -> np.ndarray:
    """Points in a shell around the default robot's base, where random states reach some."""
    directions = rng.normal(size=(n, 3))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    points = directions * rng.uniform(0.35, 0.8, size=(n, 1))
    points[:, 2] = np.abs(points[:, 2]) + 0.05
    # float32 on the wire: compare with exactly the points the daemon receives.
    return points.astype(np.float32).astype(np.float64)


def _free_states(client: Client, info: SceneInfo, rng: np.random.Generator, n: int) -> np.ndarray:
    """States free in the scene without the cloud: what the cloud blocks is then the cloud's doing."""
    states = info.sample(40 * n, rng)
    out = states[client.check_states(states, scene=info.scene_id)][:n]
    assert len(out) == n
    return out


def _spheres(points: np.ndarray, radius: float) -> list:
    return [geometry.collision_object(f"ball{i}", [geometry.sphere(radius)], at=p.tolist())
            for i, p in enumerate(points)]


def test_a_cloud_answers_as_the_same_spheres(client: Client, info: SceneInfo, rng: np.random.Generator) -> None:
    points = _points_near_robot(rng, 150)
    cloud = client.update_world(add=[geometry.point_cloud("camera", points, radius=RADIUS, voxel_size=0.0)],
                                scene=info.scene_id)
    balls = client.update_world(add=_spheres(points, RADIUS), scene=info.scene_id)
    states = _free_states(client, info, rng, 300)
    free_cloud = client.check_states(states, scene=cloud.scene_id)
    free_balls = client.check_states(states, scene=balls.scene_id)
    assert 20 < free_cloud.sum() < len(states) - 20, "the cloud should block some states and not others"
    np.testing.assert_array_equal(free_cloud, free_balls)
    for q in states[:25]:
        a = client.distance(q, exclude_self=True, scene=cloud.scene_id)
        b = client.distance(q, exclude_self=True, scene=balls.scene_id)
        assert a.lower <= b.upper + 1e-9 and b.lower <= a.upper + 1e-9
        assert abs(a.upper - b.upper) < 1e-7
    # A colliding state's contacts name the cloud, measured ball by ball.
    hit = next(q for q, f in zip(states, free_cloud) if not f
               if any(p.pair.other == "camera" for p in client.contacts(q, scene=cloud.scene_id).contacts))
    pair = next(p for p in client.contacts(hit, scene=cloud.scene_id).contacts if p.pair.other == "camera")
    assert pair.method == "cloud"
    assert pair.depth >= 0.0


def test_replace_refreshes_a_cloud_each_frame(client: Client, info: SceneInfo, rng: np.random.Generator) -> None:
    points = _points_near_robot(rng, 300)
    states = _free_states(client, info, rng, 200)
    scene = client.update_world(replace=[geometry.point_cloud("camera", points, radius=RADIUS)], scene=info.scene_id)
    first = client.check_states(states, scene=scene.scene_id)
    # The next frame sees nothing near the robot: the same id, replaced.
    far = points + np.array([20.0, 0.0, 0.0])
    nxt = client.update_world(replace=[geometry.point_cloud("camera", far, radius=RADIUS)], scene=scene.scene_id)
    assert nxt.version == scene.version + 1
    empty = client.check_states(states, scene=info.scene_id)
    np.testing.assert_array_equal(client.check_states(states, scene=nxt.scene_id), empty)
    assert first.sum() < empty.sum()


def test_a_cloud_in_a_link_frame_is_posed_at_its_state(client: Client, info: SceneInfo,
                                                       rng: np.random.Generator) -> None:
    q = info.sample(1, rng)[0]
    poses = client.link_poses(q, scene=info.scene_id)
    link = poses.link_names[2]
    X = poses.pose(link)
    R, p = _quat_matrix(X[3:]), X[:3]
    world = _points_near_robot(rng, 120)
    local = ((world - p) @ R).astype(np.float32).astype(np.float64)
    in_link = client.update_world(add=[geometry.point_cloud("camera", local, frame=link, radius=RADIUS,
                                                            state=q, voxel_size=0.0)], scene=info.scene_id)
    posed = local @ R.T + p
    in_world = client.update_world(add=[geometry.point_cloud("camera", posed, radius=RADIUS, voxel_size=0.0)],
                                   scene=info.scene_id)
    states = _free_states(client, info, rng, 300)
    np.testing.assert_array_equal(client.check_states(states, scene=in_link.scene_id),
                                  client.check_states(states, scene=in_world.scene_id))


def test_the_self_filter_drops_points_on_the_robot(client: Client, info: SceneInfo, rng: np.random.Generator) -> None:
    geo = client.scene_geometry(scene=info.scene_id)
    for _ in range(200):
        q = info.sample(1, rng)[0]
        if client.check_state(q, scene=info.scene_id).free:
            break
    poses = client.link_poses(q, scene=info.scene_id)
    on_robot = []
    for group in geo.links:
        X = poses.pose(group.name)
        R, p = _quat_matrix(X[3:]), X[:3]
        for part in group.parts:
            Rp, pp = _quat_matrix(part.pose[3:]), part.pose[:3]
            v = part.vertices[rng.choice(len(part.vertices), size=min(40, len(part.vertices)), replace=False)]
            on_robot.append((v @ Rp.T + pp) @ R.T + p)
    on_robot = np.vstack(on_robot)
    # A wall far from the robot, which the filter keeps.
    wall = np.column_stack([np.full(50, 3.0), rng.uniform(-1, 1, 50), rng.uniform(0, 1, 50)])
    points = np.vstack([on_robot, wall])
    seen = client.update_world(add=[geometry.point_cloud("camera", points, radius=0.005)], scene=info.scene_id)
    assert not client.check_state(q, scene=seen.scene_id).free, "points on the links touch them"
    filtered = client.update_world(add=[geometry.point_cloud("camera", points, radius=0.005, state=q,
                                                             self_filter_padding=0.01)], scene=info.scene_id)
    assert client.check_state(q, scene=filtered.scene_id).free
    # The wall stays, and only the wall: the scene's geometry draws one octahedron per kept point.
    kept = next(g for g in client.scene_geometry(scene=filtered.scene_id).objects if g.name == "camera")
    assert kept.parts and len(kept.parts[0].vertices) == 6 * len(wall)  # one octahedron per kept point
    # Points on the robot alone are all dropped: refused by name.
    with pytest.raises(InvalidArgumentError, match="self filter dropped every point"):
        client.update_world(add=[geometry.point_cloud("camera", on_robot, radius=0.005, state=q,
                                                      self_filter_padding=0.01)], scene=info.scene_id)


def test_bad_clouds_are_refused_by_name_and_leave_the_scene(client: Client, info: SceneInfo,
                                                            rng: np.random.Generator) -> None:
    states = info.sample(50, rng)
    before = client.check_states(states, scene=info.scene_id)
    good = _points_near_robot(rng, 10)
    cases = []
    short = geometry.point_cloud("camera", good, radius=RADIUS)
    short.parts[0].shape.point_cloud.points = short.parts[0].shape.point_cloud.points[:-4]
    cases.append((short, "not a whole number of float32"))
    nan = good.copy()
    nan[3, 1] = np.nan
    cases.append((geometry.point_cloud("camera", nan, radius=RADIUS), "point 3"))
    cases.append((geometry.point_cloud("camera", good * 1e5, radius=RADIUS), "beyond the world"))
    cases.append((geometry.point_cloud("camera", good, radius=-1.0), "radius"))
    cases.append((geometry.point_cloud("camera", good, radius=RADIUS, frame="no_such_link", state=states[0]),
                  "no_such_link"))
    cases.append((geometry.point_cloud("camera", good, radius=RADIUS, frame=info.link_names[1], state=[0.0]),
                  "state has 1 values"))
    cases.append((geometry.point_cloud("camera", good, radius=RADIUS, voxel_size=float("inf")), "voxel_size"))
    for cloud, message in cases:
        with pytest.raises(InvalidArgumentError, match=message):
            client.update_world(add=[cloud], scene=info.scene_id)
    attached = geometry.attached_object("grasped", info.link_names[-1], [geometry.point_cloud_part(good, RADIUS)])
    with pytest.raises(InvalidArgumentError, match="point cloud"):
        client.create_scene_from_request(_with_attached(client, info, attached))
    np.testing.assert_array_equal(client.check_states(states, scene=info.scene_id), before)


def _with_attached(client: Client, info: SceneInfo, attached) -> "object":
    from proximity_client._stubs import pb
    del client, info
    req = pb.CreateSceneRequest()
    req.robot.urdf_path = support.KR5_URDF
    req.attached_objects.append(attached)
    return req


def test_too_many_points_are_refused_naming_the_option() -> None:
    d = support.Daemon("--max-cloud-points", "100", "--max-scene-cloud-points", "150").start()
    try:
        with d.client() as c:
            c.wait_until_serving()
            info = c.get_scene("default")
            rng = np.random.default_rng(3)
            with pytest.raises(ResourceExhaustedError, match="--max-cloud-points = 100"):
                c.update_world(add=[geometry.point_cloud("camera", _points_near_robot(rng, 101), radius=RADIUS)],
                               scene=info.scene_id)
            one = c.update_world(add=[geometry.point_cloud("a", _points_near_robot(rng, 100), radius=RADIUS,
                                                           voxel_size=0.0)], scene=info.scene_id)
            with pytest.raises(ResourceExhaustedError, match="--max-scene-cloud-points = 150"):
                c.update_world(add=[geometry.point_cloud("b", _points_near_robot(rng, 60), radius=RADIUS)],
                               scene=one.scene_id)
    finally:
        d.kill()
