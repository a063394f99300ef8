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

import pytest

import support

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
