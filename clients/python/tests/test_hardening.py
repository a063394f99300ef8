"""A hostile or careless caller against a real proximityd: every probe here once gave a wrong answer or
pinned the server, and must now get a clear refusal or a prompt stop, leaving the server as it was.

Covered: tiny discrete resolutions (a colliding motion came back free from CheckMotion, CheckPath,
ValidatePaths and Plan), huge but finite coordinates and joint values, zero-size solids, wrong-width
packed arrays (silently reshaped), a robot without movable joints, deadlines and SIGTERM inside a long
discrete check (the server worked 38 s past a 2 s deadline and blocked the drain).
"""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Dict, List

import grpc
import numpy as np
import pytest

import support
from proximity_client import (Client, DeadlineExceededError, InvalidArgumentError, ProximityError, SceneInfo,
                              geometry)
from proximity_client.client import configurations, pb  # the wire helpers, for hand-made requests


@pytest.fixture(scope="module")
def motions(client: Client, info: SceneInfo) -> Dict[str, np.ndarray]:
    """A colliding and a free motion of the default scene (certified answers), and a short free one."""
    rng = np.random.default_rng(1511)
    found: Dict[str, np.ndarray] = {}
    states = info.sample(400, rng)
    free = states[client.check_states(states)]
    for a, b in zip(free[0::2], free[1::2]):
        r = client.check_motion(a, b)
        key = "free" if r.free else "colliding"
        found.setdefault(key, np.stack([a, b]))
        if len(found) == 2:
            break
    assert len(found) == 2, "no free and colliding motions among 200 random ones"
    q0 = found["free"][0]
    found["short"] = np.stack([q0, q0 + 1e-3])
    assert client.check_motion(*found["short"]).free
    return found


@pytest.fixture
def unchanged(client: Client, info: SceneInfo):
    """After the test: the server serves and gives the same answers as before."""
    probe = info.sample(200, np.random.default_rng(77))
    before = client.check_states(probe)
    yield
    assert client.health() == "SERVING"
    np.testing.assert_array_equal(client.check_states(probe), before)


def _refused(fn, *words: str) -> ProximityError:
    with pytest.raises(InvalidArgumentError) as e:
        fn()
    for w in words:
        assert w in e.value.details, e.value.details
    return e.value


def test_tiny_resolutions_are_refused_never_free(client: Client, motions: Dict[str, np.ndarray],
                                                unchanged: None) -> None:
    a, b = motions["colliding"]
    assert not client.check_motion(a, b, mode="discrete").free
    for resolution in (1e-12, 1e-19, 1e-100, 5e-324):
        _refused(lambda: client.check_motion(a, b, mode="discrete", resolution=resolution), "resolution", "1e+07")
        _refused(lambda: client.check_path(np.stack([a, b]), mode="discrete", resolution=resolution), "resolution")
        _refused(lambda: client.validate_paths([np.stack([a, b])], mode="discrete", resolution=resolution,
                                               progress=False), "resolution")
        _refused(lambda: client.plan(a, b, mode="discrete", resolution=resolution, time_limit=1.0), "resolution")


def test_huge_coordinates_and_empty_solids_are_refused(client: Client, info: SceneInfo, unchanged: None) -> None:
    q = np.zeros(info.dof)
    q[0] = 1e160
    _refused(lambda: client.check_state(q), "beyond")
    _refused(lambda: client.distance(q), "beyond")
    for part, words in ((geometry.box([0.1, 0.1, 0.1], at=[1e160, 0, 0]), ("extent",)),
                        (geometry.box([1e308, 1e308, 1e308]), ("extent",)),
                        (geometry.sphere(0.0, at=[0.5, 0.5, 0.5]), ("must be > 0",)),
                        (geometry.box([0.2, 0.0, 0.2], at=[0.5, 0.5, 0.5]), ("must be > 0",))):
        _refused(lambda: client.update_world(add=[geometry.collision_object("probe", [part])]), *words)


def test_wrong_width_arrays_are_refused(client: Client, info: SceneInfo, unchanged: None) -> None:
    dof = info.dof
    # (dof x (dof + 1)) values: the old server read them as dof + 1 rows of dof and called the path valid.
    wide = np.zeros((dof, dof + 1))
    _refused(lambda: client.check_path(wide), "width")
    _refused(lambda: client.validate_paths([wide], progress=False), "width")
    _refused(lambda: client.check_states(wide), "width")
    # The same values without a width: refused, not guessed.
    stub = client._stub
    for encoding in ("packed", "repeated"):
        msg = configurations(wide, encoding=encoding)
        msg.width = 0
        msg.count = 0
        with pytest.raises(grpc.RpcError) as e:
            stub.CheckPath(pb.CheckPathRequest(scene_id="default", waypoints=msg), timeout=10)
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "width" in e.value.details()
        # A count that does not match the values.
        msg = configurations(np.zeros((3, dof)), encoding=encoding)
        msg.count = 4
        with pytest.raises(grpc.RpcError) as e:
            stub.CheckStates(pb.CheckStatesRequest(scene_id="default", states=msg), timeout=10)
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "count" in e.value.details()


PEDESTAL = """<?xml version="1.0"?>
<robot name="pedestal">
  <link name="base"><collision><geometry><box size="0.4 0.4 0.2"/></geometry></collision></link>
  <joint name="mount" type="fixed"><parent link="base"/><child link="column"/><origin xyz="0 0 0.6"/></joint>
  <link name="column"><collision><geometry><cylinder radius="0.1" length="1.0"/></geometry></collision></link>
</robot>"""


def test_a_robot_without_movable_joints_works(client: Client) -> None:
    for x, expect_free in ((0.5, True), (0.05, False)):
        crate = geometry.collision_object("crate", [geometry.box([0.2, 0.2, 0.2])], at=[x, 0, 0.6])
        scene = client.create_scene(urdf=PEDESTAL, objects=[crate]).scene_id
        try:
            assert client.get_scene(scene).dof == 0
            none = np.zeros(0)
            assert client.check_state(none, scene=scene).free == expect_free
            assert list(client.check_states(np.zeros((3, 0)), scene=scene)) == [expect_free] * 3
            assert client.check_path(np.zeros((1, 0)), scene=scene).free == expect_free
            assert client.check_motion(none, none, scene=scene).free == expect_free
            d = client.distance(none, scene=scene)
            assert d.upper == pytest.approx(0.3 if expect_free else 0.0, abs=1e-6)
        finally:
            client.delete_scene(scene)


def _rpc_lines(daemon: support.Daemon, rpc: str) -> List[dict]:
    return daemon.log_records(rpc=rpc)


def _long_resolution(motion: np.ndarray) -> float:
    """A resolution that samples just under the server's cap of 1e7 states on `motion` (seconds of work)."""
    return float(np.linalg.norm(motion[1] - motion[0])) / 0.99e7


@pytest.mark.parametrize("call", ["check_motion", "check_path", "validate_paths"])
def test_deadlines_stop_long_discrete_checks_promptly(daemon: support.Daemon, client: Client,
                                                      motions: Dict[str, np.ndarray], call: str,
                                                      unchanged: None) -> None:
    short = motions["short"]
    resolution = _long_resolution(short)
    timeout = 0.4
    before = len(_rpc_lines(daemon, {"check_motion": "CheckMotion", "check_path": "CheckPath",
                                     "validate_paths": "ValidatePaths"}[call]))
    start = time.monotonic()
    with pytest.raises(DeadlineExceededError):
        if call == "check_motion":
            client.check_motion(*short, mode="discrete", resolution=resolution, timeout=timeout)
        elif call == "check_path":
            client.check_path(short, mode="discrete", resolution=resolution, timeout=timeout)
        else:
            client.validate_paths([short], mode="discrete", resolution=resolution, progress=False, timeout=timeout)
    assert time.monotonic() - start < timeout + 2.0
    # The server's own record of the call: it stopped working within a few milliseconds of the
    # deadline (the log line is written when the handler returns).
    rpc = {"check_motion": "CheckMotion", "check_path": "CheckPath", "validate_paths": "ValidatePaths"}[call]
    assert support.eventually(lambda: len(_rpc_lines(daemon, rpc)) > before, timeout=5.0), daemon.stderr_text()
    rec = _rpc_lines(daemon, rpc)[-1]
    assert rec["code"] == "DeadlineExceeded", rec
    assert rec["latency_ms"] < timeout * 1e3 + 100.0, rec


PLANAR = support.REPO / "tests" / "data" / "robots" / "planar_2link.urdf"


def test_server_files_are_confined_to_the_allowed_roots(tmp_path: Path) -> None:
    """Requests may name only regular files under --allow-path-root; every refusal reads the same and
    echoes no file content; a FIFO or a device never blocks or drains a thread."""
    root = tmp_path / "root"
    root.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret.urdf"
    secret.write_text("<robot name='SECRET-7f3a'><link name='x'/></robot>")
    allowed = root / "planar.urdf"
    allowed.write_text(PLANAR.read_text())
    (root / "escape.urdf").symlink_to(secret)
    os.mkfifo(root / "fifo.urdf")
    (root / "folder.urdf").mkdir()
    (root / "broken.urdf").write_text("<robot name='SECRET-b2c1'><link name='a'></robot>")
    stl = root / "tetra.stl"
    stl.write_bytes((support.REPO / "tests" / "data" / "tetrahedron.stl").read_bytes())
    with support.Daemon(path_roots=[root]) as d, d.client(timeout=10) as c:
        c.wait_until_serving()
        assert c.create_scene(urdf_path=str(allowed)).dof == 2
        refusals = {}
        for name, path in (("missing", root / "missing.urdf"), ("outside", secret), ("symlink", root / "escape.urdf"),
                           ("dotdot", root / ".." / "outside" / "secret.urdf"), ("fifo", root / "fifo.urdf"),
                           ("directory", root / "folder.urdf"), ("device", Path("/dev/zero")),
                           ("system", Path("/etc/passwd"))):
            start = time.monotonic()
            e = _refused(lambda: c.create_scene(urdf_path=str(path)), "allow-path-root")
            assert time.monotonic() - start < 5.0, f"{name} took {time.monotonic() - start:.1f} s"
            assert "SECRET" not in e.details and "root:" not in e.details, (name, e.details)
            refusals[name] = e.details.replace(str(path), "PATH")
        # One message whatever the cause: nothing tells a missing file from a forbidden one.
        assert len(set(refusals.values())) == 1, refusals
        # An allowed file that does not parse: named, but its content is not echoed.
        e = _refused(lambda: c.create_scene(urdf_path=str(root / "broken.urdf")))
        assert "SECRET" not in e.details, e.details
        # Mesh files and package folders under the same rule.
        part = geometry.mesh_file(str(stl), at=[0.5, 0.5, 0.5])
        assert c.create_scene(urdf_path=str(allowed), objects=[geometry.collision_object("t", [part])]).created
        far = geometry.mesh_file(str(support.REPO / "tests" / "data" / "tetrahedron.stl"))
        _refused(lambda: c.create_scene(urdf_path=str(allowed), objects=[geometry.collision_object("t", [far])]),
                 "allow-path-root")
        assert c.health() == "SERVING"
    # With no roots, no request opens a server file at all.
    with support.Daemon(path_roots=[]) as d, d.client(timeout=10) as c:
        c.wait_until_serving()
        _refused(lambda: c.create_scene(urdf_path=support.KR5_URDF), "allow-path-root")
        assert c.create_scene(urdf=PLANAR.read_text()).dof == 2  # content uploads still work


def test_sigterm_drains_mid_call() -> None:
    """A long discrete check in flight does not hold the drain past its grace period."""
    with support.Daemon("--drain-seconds", "1") as d:
        with d.client() as c:
            c.wait_until_serving()
            info = c.get_scene("default")
            rng = np.random.default_rng(5)
            states = info.sample(50, rng)
            q0 = states[c.check_states(states)][0]
            short = np.stack([q0, q0 + 1e-3])
            rc, elapsed, errors, running = support.terminate_during(
                d, lambda: c.check_motion(*short, mode="discrete", resolution=_long_resolution(short), timeout=120),
                after=0.3, timeout=20)
            assert rc == 0, d.stderr_text()
            assert elapsed < 1.0 + 3.0, f"drain took {elapsed:.1f} s with a 1 s grace period"
            assert not running
            assert errors and isinstance(errors[0], ProximityError), errors


def test_visual_meshes_as_collision_geometry_by_path_and_by_bundle() -> None:
    """collision_from_visual loads each link's visual meshes (the WAM's COLLADA files instead of its
    collision STLs): more triangles, another scene id, and the same id by server path or by bundle."""
    from proximity_client.bundle import robot_bundle
    wam = Path("/usr/share/doc/dart/data/urdf/wam/wam.urdf")
    packages = {"herb_description": str(wam.parent)}
    bundle = robot_bundle(wam, package_dirs=packages, collision_from_visual=True)
    assert any(uri.endswith(".dae") for uri in bundle.files) and any(uri.endswith(".STL") for uri in bundle.files)
    with support.Daemon(path_roots=[wam.parent]) as d, d.client(timeout=60) as c:
        c.wait_until_serving()
        collision = c.create_scene(urdf_path=str(wam), package_dirs=packages)
        visual = c.create_scene(urdf_path=str(wam), package_dirs=packages, collision_from_visual=True)
        assert visual.scene_id != collision.scene_id
        assert visual.triangles > collision.triangles
        states = visual.sample(100, np.random.default_rng(5))
        assert len(c.check_states(states, scene=visual.scene_id)) == 100
    with support.Daemon(path_roots=[]) as d, d.client(timeout=60) as c:
        c.wait_until_serving()
        uploaded = c.create_scene_from_files(str(wam), package_dirs=packages, collision_from_visual=True)
        assert uploaded.scene_id == visual.scene_id and uploaded.triangles == visual.triangles


def test_uploaded_bundles_need_no_server_files_and_give_the_same_id(tmp_path: Path) -> None:
    """A robot's URDF and meshes uploaded as one bundle load on a server that opens no file, and the
    same files give the same scene id whatever the route (server paths, text plus bundle)."""
    from proximity_client.bundle import robot_bundle
    kr5 = Path(support.KR5_URDF)
    # The KR5 with package:// URIs, its meshes in a package folder named by package.xml, not by folder.
    pkg = tmp_path / "some_folder"
    (pkg / "meshes").mkdir(parents=True)
    (pkg / "package.xml").write_text("<package><name>kr5_description</name></package>")
    for stl in (kr5.parent / "meshes").glob("*.STL"):
        (pkg / "meshes" / stl.name).write_bytes(stl.read_bytes())
    urdf = tmp_path / "kr5.urdf"
    urdf.write_text(kr5.read_text().replace('filename="meshes/', 'filename="package://kr5_description/meshes/'))
    bundle = robot_bundle(urdf, ros_package_path=str(tmp_path))
    assert len(bundle.files) == 7 and all(k.startswith("package://kr5_description/") for k in bundle.files)
    box = geometry.collision_object("box", [geometry.box([0.2, 0.2, 0.2])], at=[0.5, 0.3, 0.4])
    with support.Daemon(path_roots=[kr5.parent, tmp_path]) as d, d.client(timeout=60) as c:
        c.wait_until_serving()
        # The URDF with relative mesh paths: server paths, then text plus bundle.
        plain = c.create_scene(urdf_path=str(kr5), objects=[box])
        uploaded = c.create_scene_from_files(str(kr5), objects=[box])
        assert not uploaded.created and uploaded.scene_id == plain.scene_id
        # The package:// URDF: server paths through a package map, then text plus bundle.
        by_path = c.create_scene(urdf_path=str(urdf), package_dirs={"kr5_description": str(pkg)}, objects=[box])
        by_bundle = c.create_scene_from_files(str(urdf), package_dirs={"kr5_description": str(pkg)}, objects=[box])
        assert not by_bundle.created and by_bundle.scene_id == by_path.scene_id
        assert by_path.scene_id != plain.scene_id  # another URDF text
        # A changed mesh is a different scene.
        changed = dict(bundle.files)
        first = sorted(changed)[0]
        changed[first] = b"x" + changed[first][1:]  # a binary STL's header byte: same triangles, new bytes
        other = c.create_scene(urdf=bundle.urdf, files=changed, objects=[box])
        assert other.scene_id != by_path.scene_id
    with support.Daemon(path_roots=[]) as d, d.client(timeout=60) as c:
        c.wait_until_serving()
        s = c.create_scene_from_files(str(urdf), package_dirs={"kr5_description": str(pkg)}, objects=[box])
        assert s.scene_id == by_path.scene_id
        states = c.get_scene(s.scene_id).sample(200, np.random.default_rng(4))
        answers = c.check_states(states, scene=s.scene_id)
        assert 0 < answers.sum() < len(answers)


def test_default_scene_takes_an_srdf_and_packages() -> None:
    """--default-scene-urdf with --default-scene-srdf and --default-scene-package: the built-in scene on
    a robot whose meshes are package:// URIs, its SRDF's allowed pairs applied (the WAM's collision
    meshes overlap at two joints in every configuration: without the SRDF its zero state self-collides
    there); a malformed package flag stops the daemon with a message naming the flag."""
    wam = Path("/usr/share/doc/dart/data/urdf/wam/wam.urdf")
    if not wam.exists():
        pytest.skip("Debian's dart-doc is not installed (the Barrett WAM)")
    srdf = Path(support.REPO) / "tests" / "data" / "robots" / "wam.srdf"
    flags = ("--default-scene-urdf", str(wam), "--default-scene-package", f"herb_description={wam.parent}")
    answers = {}
    for with_srdf in (False, True):
        extra = flags + (("--default-scene-srdf", str(srdf)) if with_srdf else ())
        with support.Daemon(*extra) as d, d.client(timeout=60) as c:
            c.wait_until_serving()
            info = c.get_scene()
            assert info.robot_name == "wam" and info.dof == 7, info
            # The robot's self contacts only: the WAM stands at the workcell's origin as its URDF says (the
            # built-in KR5's mount correction is not applied to it), where the KR5-sized table may touch it.
            answers[with_srdf] = {frozenset(p.pair.names) for p in c.contacts(np.zeros(info.dof), exclude_world=True,
                                                                              max_pairs=4096).contacts}
    bare = answers[False]
    assert bare, "the WAM's overlapping joint meshes do not collide without its SRDF"
    with_srdf = answers[True]
    assert not (bare & with_srdf), (bare, with_srdf)
    with pytest.raises(RuntimeError, match="--default-scene-package: expected NAME=DIR"):
        support.Daemon("--default-scene-urdf", str(wam), "--default-scene-package", "herb_description").start(timeout=30)
