"""Lenient where ROS is lenient, through `proximity scene create` against a real proximityd: a missing
visual mesh (the link keeps its collision geometry), SRDF elements outside the format and disabled
pairs naming links the URDF lacks, each accepted with one warning; package:// resolved through a
package.xml <name> found on ROS_PACKAGE_PATH (a folder named otherwise), giving the id of an explicit
package map; and Z-up COLLADA meshes kept as authored (the WAM's link meshes load as its STLs do)."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import math
import warnings

import pytest

import support
from proximity_client import Client, InvalidArgumentError, ProximityWarning

PLANAR = support.REPO / "tests" / "data" / "robots" / "planar_2link.urdf"
WAM_DIR = Path("/usr/share/doc/dart/data/urdf/wam")


def create(daemon: support.Daemon, *args: str, env: dict = None) -> dict:
    proc = support.run_cli(daemon, "scene", "create", *args, "--json", env_extra=env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_missing_visual_mesh_falls_back_to_collision_geometry_with_one_warning(daemon: support.Daemon) -> None:
    plain = create(daemon, "--urdf", str(PLANAR))
    assert plain["warnings"] == []
    visual = create(daemon, "--urdf", str(PLANAR), "--collision-from-visual")
    assert len(visual["warnings"]) == 1
    assert "'upper'" in visual["warnings"][0] and "no_such_package" in visual["warnings"][0]
    assert visual["triangles"] == plain["triangles"]  # the link kept its box
    text = support.run_cli(daemon, "scene", "create", "--urdf", str(PLANAR), "--collision-from-visual")
    assert text.returncode == 0 and text.stdout.count("warning:") == 1, text.stdout


def test_unknown_srdf_entries_are_ignored_with_one_warning_each(daemon: support.Daemon, tmp_path: Path) -> None:
    srdf = tmp_path / "planar.srdf"
    srdf.write_text("""<robot name="planar_2link"><group name="arm"><chain base_link="base" tip_link="tip"/></group>
      <end_effector name="ee" parent_link="tip" group="arm"/><vendor_extension/>
      <disable_collisions link1="base" link2="gripper_from_another_variant" reason="Never"/>
      <disable_collisions link1="base" link2="tip" reason="Never"/></robot>""")
    doc = create(daemon, "--urdf", str(PLANAR), "--srdf", str(srdf))
    warnings = doc["warnings"]
    assert len(warnings) == 2, warnings
    assert any("'gripper_from_another_variant'" in w for w in warnings)
    assert any("<vendor_extension>" in w for w in warnings)


@pytest.mark.skipif(not WAM_DIR.is_dir(), reason="Debian dart-doc's WAM is not installed")
def test_package_found_by_its_package_xml_name(daemon: support.Daemon, tmp_path: Path) -> None:
    # A folder named otherwise whose package.xml says herb_description, found through ROS_PACKAGE_PATH.
    folder = tmp_path / "ws" / "src" / "wam_meshes_checkout"
    folder.mkdir(parents=True)
    (folder / "package.xml").write_text("<package format='2'><name>herb_description</name><version>1.0.0</version>"
                                        "</package>")
    os.symlink(WAM_DIR / "meshes", folder / "meshes")
    by_crawl = create(daemon, "--urdf", str(WAM_DIR / "wam.urdf"), env={"ROS_PACKAGE_PATH": str(tmp_path / "ws")})
    by_map = create(daemon, "--urdf", str(WAM_DIR / "wam.urdf"), "--package", f"herb_description={WAM_DIR}")
    assert by_crawl["scene_id"] == by_map["scene_id"] and by_crawl["warnings"] == []
    # The WAM names COLLADA (Z_UP) visual meshes beside its STL collision meshes: taken as authored,
    # colliding with the visual meshes loads too.
    visual = create(daemon, "--urdf", str(WAM_DIR / "wam.urdf"), "--package", f"herb_description={WAM_DIR}",
                    "--collision-from-visual")
    assert visual["scene_id"] != by_map["scene_id"] and visual["triangles"] > by_map["triangles"]
    shutil.rmtree(folder, ignore_errors=True)


PLANAR_SRDF = support.REPO / "tests" / "data" / "robots" / "planar_2link.srdf"


def test_srdf_virtual_joints_are_read_as_moveit_reads_them(daemon: support.Daemon, tmp_path: Path) -> None:
    """A MoveIt configuration's <virtual_joint> and a <passive_joint> naming it load (a fixed one places the
    robot, no warning); planar and floating ones are held at the identity with one warning."""
    fixed = tmp_path / "fixed.srdf"
    fixed.write_text("""<robot name="planar_2link">
      <virtual_joint name="virtual_joint" type="fixed" parent_frame="world" child_link="base"/>
      <group name="arm"><joint name="virtual_joint"/><chain base_link="base" tip_link="tip"/></group>
      <passive_joint name="virtual_joint"/></robot>""")
    doc = create(daemon, "--urdf", str(PLANAR), "--srdf", str(fixed))
    assert doc["warnings"] == []
    planar = tmp_path / "planar.srdf"
    planar.write_text("""<robot name="planar_2link">
      <virtual_joint name="base_joint" type="planar" parent_frame="odom" child_link="base"/>
      <passive_joint name="base_joint"/></robot>""")
    doc = create(daemon, "--urdf", str(PLANAR), "--srdf", str(planar))
    assert len(doc["warnings"]) == 1 and "'base_joint' (planar)" in doc["warnings"][0], doc["warnings"]
    other = tmp_path / "other.srdf"
    other.write_text("""<robot name="planar_2link"><passive_joint name="virtual_joint"/></robot>""")
    bad = support.run_cli(daemon, "scene", "create", "--urdf", str(PLANAR), "--srdf", str(other))
    assert bad.returncode == 2 and "'virtual_joint'" in bad.stderr, bad.stderr


def test_plan_ends_as_moveit_reads_them(client: Client) -> None:
    """Plan ends: values for joints the scene lacks are ignored, a start within 0.05 and a goal within 1e-4
    of a limit are clamped to it, one warning each (ProximityWarning and PlanResult.warnings); further out,
    non-finite values and wrong counts are refused as before."""
    s = client.create_scene(urdf_path=str(PLANAR), srdf_path=str(PLANAR_SRDF))  # shoulder +-3, elbow +-2.5
    start = {"wheel_left": 0.7, "shoulder": 3.03, "elbow": 0.5, "wheel_right": 0.1}
    goal = {"shoulder": 1.0, "elbow": 2.50005, "torso_lift": 0.2}
    with pytest.warns(ProximityWarning) as caught:
        r = client.plan(start, goal, scene=s.scene_id)
    assert r.solved, r.message
    assert r.path[0].tolist() == [3.0, 0.5] and r.path[-1].tolist() == [1.0, 2.5]
    assert len(r.warnings) == 4 and len(caught) == 4, r.warnings
    assert "start: ignored 2 value(s)" in r.warnings[0] and "'wheel_left', 'wheel_right'" in r.warnings[0]
    assert "goal: ignored 1 value(s)" in r.warnings[1] and "'torso_lift'" in r.warnings[1]
    assert "start: clamped joint 'shoulder' from 3.03 to 3 (within 0.05" in r.warnings[2], r.warnings[2]
    assert "goal: clamped joint 'elbow' from 2.50005 to 2.5 (within 1e-04" in r.warnings[3], r.warnings[3]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # in-limit ends in scene order: no warning
        assert client.plan([1.0, 0.5], [1.0, 2.5], scene=s.scene_id).warnings == []
    # A goal written at pi against limits of +-3.14159 (2.65e-6 out) is clamped.
    spun = client.create_scene(urdf=PLANAR.read_text().replace('lower="-3" upper="3"',
                                                               'lower="-3.14159" upper="3.14159"'))
    with pytest.warns(ProximityWarning):
        r = client.plan([0.0, 0.0], [math.pi, 0.0], scene=spun.scene_id)
    assert r.solved and r.path[-1].tolist() == [3.14159, 0.0]

    def refused(start_q, goal_q, *needles: str) -> None:
        with pytest.raises(InvalidArgumentError) as e:
            client.plan(start_q, goal_q, scene=s.scene_id)
        for n in needles:
            assert n in e.value.details, e.value.details

    refused({"shoulder": 3.06, "elbow": 0.0}, [1.0, 0.0], "start", "'shoulder'", "3.06", "[-3, 3]")
    refused([1.0, 0.0], {"shoulder": 1.0, "elbow": -2.5002}, "goal", "'elbow'", "-2.5002", "[-2.5, 2.5]")
    refused({"shoulder": math.nan, "elbow": 0.0, "wheel": 1.0}, [1.0, 0.0], "start", "'shoulder'", "not finite")
    refused({"elbow": 0.0, "wheel": 1.0}, [1.0, 0.0], "joint 'shoulder' is missing")
    refused([1.0, 0.0, 0.3], [1.0, 0.0], "start.positions: expected 2 values")


def test_queries_ignore_joints_the_scene_lacks_with_one_warning(client: Client) -> None:
    """CheckState, CheckMotion, ComputeDistance, GetLinkPoses, ComputeContacts: values by name for joints the
    scene lacks are ignored (as MoveIt reads a joint state) with one ProximityWarning naming them; the answers
    are those without them."""
    s = client.create_scene(urdf_path=str(PLANAR), srdf_path=str(PLANAR_SRDF))
    q = {"shoulder": 1.0, "elbow": 0.5}
    extra = dict(q, wheel=3.0, caster=0.1)
    calls = {
        "CheckState": lambda x: client.check_state(x, scene=s.scene_id).free,
        "CheckMotion": lambda x: client.check_motion(x, {"shoulder": 1.2, "elbow": 0.5}, scene=s.scene_id).free,
        "ComputeDistance": lambda x: client.distance(x, scene=s.scene_id).lower,
        "GetLinkPoses": lambda x: client.link_poses(x, scene=s.scene_id).poses.tolist(),
        "ComputeContacts": lambda x: client.contacts(x, scene=s.scene_id).free,
    }
    for method, call in calls.items():
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            plain = call(q)  # no warning without unknown joints
        with pytest.warns(ProximityWarning) as caught:
            lenient = call(extra)
        assert lenient == plain, method
        texts = [str(w.message) for w in caught]
        assert len(texts) == 1 and texts[0].startswith(method + ": ") and "'wheel'" in texts[0] and \
            "'caster'" in texts[0], texts


def test_cli_ignores_joints_the_scene_lacks_with_one_warning(daemon: support.Daemon, client: Client) -> None:
    s = client.create_scene(urdf_path=str(PLANAR), srdf_path=str(PLANAR_SRDF))
    p = support.run_cli(daemon, "plan", "--scene", s.scene_id, "--start=shoulder=1,elbow=0.5,wheel=3",
                        "--goal=1.2,0.5", "--json")
    assert p.returncode == 0, p.stderr
    assert p.stderr.count("warning:") == 1 and "'wheel'" in p.stderr, p.stderr
    assert json.loads(p.stdout)["warnings"] == [p.stderr.split("warning: ", 1)[1].strip()]
    poses = support.run_cli(daemon, "poses", "--scene", s.scene_id, "--state=shoulder=1,elbow=0.5,wheel=3")
    assert poses.returncode == 0, poses.stderr
    assert poses.stderr.count("warning:") == 1 and "'wheel'" in poses.stderr, poses.stderr
