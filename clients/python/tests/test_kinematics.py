"""Link poses (GetLinkPoses), scene geometry (GetSceneGeometry) and plan time stamps against a real
proximityd, checked against an independent forward-kinematics oracle (urdf_fk: the URDF read with
xml.etree, joint transforms composed with numpy) and the velocity limits read from the URDF files."""
from __future__ import annotations

import json
import math
from pathlib import Path

import grpc
import numpy as np
import pytest

import support
from proximity_client import (Client, InvalidArgumentError, NotFoundError, ResourceExhaustedError, geometry,
                              kinematics)
from proximity_client._stubs import pb
from urdf_fk import UrdfChain, pose_matrix, rpy_matrix, transform

KR5 = Path(support.KR5_URDF)
WAM = Path("/usr/share/doc/dart/data/urdf/wam/wam.urdf")
PANDA = support.REPO.parent / "shared" / "data" / "robots" / "panda"
#: A base pose that is neither the identity nor axis-aligned, so that a frame mix-up shows.
BASE_XYZ = (0.31, -0.22, 0.12)
BASE_RPY = (0.1, -0.2, 0.7)


def base_matrix() -> np.ndarray:
    return transform(rpy_matrix(*BASE_RPY), np.array(BASE_XYZ))


def needs(path: Path, what: str) -> None:
    if not path.exists():
        pytest.skip(f"{what} not found at {path}")


def random_states(info, rng: np.random.Generator, n: int) -> np.ndarray:
    return info.sample(n, rng)


def check_against_oracle(chain: UrdfChain, info, states: np.ndarray, poses, base: np.ndarray) -> None:
    assert poses.poses.shape == (len(states), len(info.link_names), 7)
    assert poses.link_names == info.link_names
    assert sorted(poses.link_names) == sorted(chain.links)
    for i, q in enumerate(states):
        want = chain.link_poses(dict(zip(info.joint_names, q)), base)
        for k, name in enumerate(poses.link_names):
            got = pose_matrix(poses.poses[i, k])
            assert np.allclose(got, want[name], atol=1e-9, rtol=0), (i, name, got, want[name])
            assert poses.poses[i, k, 6] >= 0.0, "quaternions are sent with w >= 0"


@pytest.fixture(scope="module")
def kr5(client: Client):
    needs(KR5, "Debian dart-doc's KR5")
    return client.create_scene(urdf_path=str(KR5), base_pose=geometry.pose(BASE_XYZ, rpy=BASE_RPY))


def test_kr5_poses_match_the_urdf_oracle(client: Client, kr5, rng: np.random.Generator) -> None:
    chain = UrdfChain(KR5)
    states = random_states(kr5, rng, 200)
    poses = client.link_poses(states, scene=kr5.scene_id)
    check_against_oracle(chain, kr5, states, poses, base_matrix())
    assert poses.within_limits.all()
    assert np.allclose(pose_matrix(poses.base_pose), base_matrix(), atol=1e-12)


def test_single_state_equals_its_batch_row(client: Client, kr5, rng: np.random.Generator) -> None:
    states = random_states(kr5, rng, 5)
    batch = client.link_poses(states, scene=kr5.scene_id)
    for i, q in enumerate(states):
        one = client.link_poses(q, scene=kr5.scene_id)
        assert one.poses.shape == (1, len(kr5.link_names), 7)
        np.testing.assert_array_equal(one.poses[0], batch.poses[i])
        by_name = client.link_poses(dict(zip(kr5.joint_names, q)), scene=kr5.scene_id)
        np.testing.assert_array_equal(by_name.poses[0], batch.poses[i])
    # Columns in another order, named.
    order = list(reversed(range(kr5.dof)))
    named = client.link_poses(states[:, order], [kr5.joint_names[j] for j in order], scene=kr5.scene_id)
    np.testing.assert_array_equal(named.poses, batch.poses)


def test_out_of_limits_is_posed_and_flagged(client: Client, kr5) -> None:
    q = kr5.upper + 0.5
    poses = client.link_poses(q, scene=kr5.scene_id)
    assert not poses.within_limits[0]
    check_against_oracle(UrdfChain(KR5), kr5, q[None, :], poses, base_matrix())


def test_wam_poses_match_the_urdf_oracle(client: Client, rng: np.random.Generator) -> None:
    needs(WAM, "Debian dart-doc's WAM")
    info = client.create_scene(urdf_path=str(WAM), package_dirs={"herb_description": str(WAM.parent)})
    states = random_states(info, rng, 100)
    poses = client.link_poses(states, scene=info.scene_id)
    check_against_oracle(UrdfChain(WAM), info, states, poses, np.eye(4))


def test_panda_with_mimic_fingers_matches_the_urdf_oracle(client: Client, rng: np.random.Generator) -> None:
    urdfs = sorted(PANDA.glob("**/panda.urdf")) if PANDA.exists() else []
    if not urdfs:
        pytest.skip(f"the Panda URDF was not found under {PANDA} (the shared robots)")
    urdf = urdfs[0]
    package_root = next((p for p in urdf.parents if p.name == "moveit_resources_panda_description"), None)
    packages = {"moveit_resources_panda_description": str(package_root)} if package_root else {}
    try:
        info = client.create_scene_from_files(str(urdf), package_dirs=packages)
    except Exception as e:  # noqa: BLE001 - a robot whose meshes are absent is a skip, not a failure
        pytest.skip(f"the Panda at {urdf} did not load: {e}")
    states = random_states(info, rng, 100)
    poses = client.link_poses(states, scene=info.scene_id)
    check_against_oracle(UrdfChain(urdf), info, states, poses, np.eye(4))


def test_bad_requests_name_the_problem(client: Client, kr5) -> None:
    q = np.zeros(kr5.dof)
    q[2] = math.nan
    with pytest.raises(InvalidArgumentError, match="state"):
        client.link_poses(q, scene=kr5.scene_id)
    with pytest.raises(InvalidArgumentError, match="state"):
        client.link_poses(np.zeros(kr5.dof + 1), scene=kr5.scene_id)
    rows = np.zeros((3, kr5.dof))
    rows[1, 0] = math.inf
    with pytest.raises(InvalidArgumentError, match="states"):
        client.link_poses(rows, scene=kr5.scene_id)
    with pytest.raises(InvalidArgumentError, match="states"):
        client.link_poses(np.zeros((3, kr5.dof - 1)), scene=kr5.scene_id)
    with pytest.raises(NotFoundError, match="no-such-scene"):
        client.link_poses(q * 0, scene="no-such-scene")
    stub = client._stub  # noqa: SLF001 - requests the client never builds
    for request, words in ((pb.GetLinkPosesRequest(scene_id=kr5.scene_id), "give state"),
                           (pb.GetLinkPosesRequest(scene_id=kr5.scene_id, state=pb.JointPositions(positions=q * 0),
                                                   states=pb.Configurations()), "not both")):
        with pytest.raises(grpc.RpcError) as e:
            stub.GetLinkPoses(request, timeout=30)
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT and words in e.value.details()


def test_batch_limits_are_named() -> None:
    with support.Daemon("--max-batch-states", "10", "--max-message-bytes", "200000") as d, d.client() as c:
        c.wait_until_serving()
        info = c.get_scene("default")
        with pytest.raises(ResourceExhaustedError, match="--max-batch-states"):
            c.link_poses(np.zeros((11, info.dof)))
        assert len(c.link_poses(np.zeros((10, info.dof)))) == 10
    with support.Daemon("--max-message-bytes", "100000") as d, d.client() as c:
        c.wait_until_serving()
        info = c.get_scene("default")
        n = 100000 // (len(info.link_names) * 56) + 10  # more poses than a response may carry
        with pytest.raises(ResourceExhaustedError, match="--max-message-bytes"):
            c.link_poses(np.zeros((n, info.dof)))


def test_velocity_limits_come_from_the_urdf(kr5) -> None:
    chain = UrdfChain(KR5)
    assert [l.velocity for l in kr5.limits] == [chain.joints[n]["velocity"] for n in kr5.joint_names]
    assert all(v > 0 for v in kr5.velocity)


def test_plan_time_stamps_follow_the_velocity_rule(client: Client, info) -> None:
    chain = UrdfChain(KR5)
    velocity = np.array([chain.joints[n]["velocity"] for n in info.joint_names])
    start = np.zeros(info.dof)
    goal = np.clip(np.array([1.0, 0.5, 0.3, -0.5, 0.4, 1.2])[:info.dof], info.lower, info.upper)
    r = client.plan(start, goal, time_limit=10.0, seed=3)
    assert r.solved, r.message
    assert r.time_from_start.shape == (r.path.shape[0],)
    expected = [0.0]
    for a, b in zip(r.path[:-1], r.path[1:]):
        expected.append(expected[-1] + max(abs(b[j] - a[j]) / velocity[j] for j in range(info.dof)))
    np.testing.assert_allclose(r.time_from_start, expected, rtol=1e-12, atol=1e-12)
    assert np.all(np.diff(r.time_from_start) > 0)
    np.testing.assert_allclose(kinematics.time_from_start(r.path, info.velocity), expected, rtol=1e-12, atol=1e-12)


def test_time_from_start_rule_details() -> None:
    path = np.array([[0.0, 0.0, 0.0], [1.0, -2.0, 5.0], [1.0, -2.0, 9.0]])
    # The third joint has no limit: it does not count; a segment moving only it lasts 0 s.
    np.testing.assert_allclose(kinematics.time_from_start(path, [0.5, 4.0, 0.0]), [0.0, 2.0, 2.0])
    assert kinematics.time_from_start(path, [0.0, 0.0, 0.0]) is None


def test_poses_cli_prints_the_oracle_poses(daemon: support.Daemon, kr5) -> None:
    q = [0.3, -0.4, 0.5, 0.6, -0.7, 0.8][:kr5.dof]
    proc = support.run_cli(daemon, "poses", "--scene", kr5.scene_id, "--state", ",".join(map(str, q)), "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["robot"] == kr5.robot_name and doc["scene"] == kr5.scene_id
    want = UrdfChain(KR5).link_poses(dict(zip(kr5.joint_names, q)), base_matrix())
    assert set(doc["links"]) == set(want)
    for name, pose in doc["links"].items():
        assert np.allclose(pose_matrix(np.array(pose)), want[name], atol=1e-9)
    text = support.run_cli(daemon, "poses", "--scene", kr5.scene_id, "--state", ",".join(map(str, q)))
    assert text.returncode == 0 and kr5.robot_name in text.stdout
    assert all(name in text.stdout for name in kr5.link_names)


# ---- GetSceneGeometry ---------------------------------------------------------------------------------

def collision_counts(urdf: Path) -> dict:
    import xml.etree.ElementTree as ET
    root = ET.parse(str(urdf)).getroot()
    return {l.get("name"): len(l.findall("collision")) for l in root.findall("link")}


def test_geometry_holds_every_link_and_object(client: Client, info) -> None:
    g = client.scene_geometry()
    assert [l.name for l in g.links] == info.link_names
    assert sorted(o.name for o in g.objects) == sorted(info.object_ids)
    counts = collision_counts(KR5)
    for link in g.links:
        assert len(link.parts) == counts[link.name], link.name
        for part in link.parts:
            assert part.vertices.ndim == 2 and part.vertices.shape[1] == 3 and np.isfinite(part.vertices).all()
            assert part.triangles.max() < len(part.vertices)
            assert part.shape in ("mesh", "box", "cylinder", "sphere") and not part.hull
    mesh_triangles = sum(len(p.triangles) for l in g.links for p in l.parts if p.shape == "mesh")
    mesh_triangles += sum(len(p.triangles) for o in g.objects for p in o.parts if p.shape == "mesh")
    assert mesh_triangles == info.triangles  # SceneInfo counts the meshes; primitives are tessellated here
    assert g.triangles == sum(len(p.triangles) for grp in g.links + g.objects for p in grp.parts)
    assert g.hull_parts == 0


def test_geometry_fits_max_triangles_with_hulls(client: Client, info) -> None:
    full = client.scene_geometry()
    cap = full.triangles // 3
    g = client.scene_geometry(cap)
    assert g.triangles <= cap < full.triangles
    assert g.hull_parts > 0
    hulls = [p for l in g.links for p in l.parts if p.hull]
    assert len(hulls) == g.hull_parts and all(p.shape == "mesh" for p in hulls)
    with pytest.raises(ResourceExhaustedError, match="max_triangles"):
        client.scene_geometry(10)


def test_geometry_of_primitives_and_attached_objects(client: Client) -> None:
    needs(KR5, "Debian dart-doc's KR5")
    objects = [
        geometry.collision_object("ball", [geometry.sphere(0.1)], at=(1.0, 0.0, 0.5)),
        geometry.collision_object("pill", [geometry.capsule(0.05, 0.3)], at=(1.0, 0.5, 0.5)),
        geometry.collision_object("cone", [geometry.cone(0.1, 0.2)], at=(1.0, -0.5, 0.5)),
    ]
    info = client.create_scene(urdf_path=str(KR5), objects=objects)
    g = client.scene_geometry(scene=info.scene_id)
    by_name = {o.name: o for o in g.objects}
    for name, shape, radius in (("ball", "sphere", 0.1), ("pill", "capsule", 0.05), ("cone", "cone", 0.1)):
        (part,) = by_name[name].parts
        assert part.shape == shape
        # Tessellated with every vertex on the solid's surface: within its radius of the axis or centre.
        local = part.vertices
        if shape == "sphere":
            assert np.allclose(np.linalg.norm(local, axis=1), radius, atol=1e-9)
        else:
            assert np.linalg.norm(local[:, :2], axis=1).max() <= radius + 1e-9
        assert np.allclose(part.pose[:3], [1.0, {"ball": 0.0, "pill": 0.5, "cone": -0.5}[name], 0.5])
