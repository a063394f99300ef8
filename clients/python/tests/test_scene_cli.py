"""`proximity scene create|name|list` against a real proximityd: your robot (Debian dart-doc's Barrett WAM,
package:// meshes, the repository's SRDF) uploaded as one bundle with a name, the same id by upload and
by server path, names accepted by --scene and PROXIMITY_SCENE, every output naming the robot and the
scene, a taken name refused in the user's words, and a missing --scene refused with the scenes listed."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import support
from proximity_client import Client

WAM_DIR = Path("/usr/share/doc/dart/data/urdf/wam")
WAM_URDF = WAM_DIR / "wam.urdf"
WAM_SRDF = support.REPO / "tests" / "data" / "robots" / "wam.srdf"

pytestmark = pytest.mark.skipif(not WAM_URDF.is_file(), reason=f"{WAM_URDF} (Debian dart-doc) is not installed")


def create(daemon: support.Daemon, *extra: str) -> "subprocess.CompletedProcess":  # noqa: F821
    return support.run_cli(daemon, "scene", "create", "--urdf", str(WAM_URDF), "--srdf", str(WAM_SRDF),
                           "--package", f"herb_description={WAM_DIR}", *extra)


def test_scene_create_names_the_robot_and_gives_the_id_of_a_path_upload(daemon: support.Daemon,
                                                                        client: Client) -> None:
    proc = create(daemon, "--name", "wam", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["robot"] == "wam" and doc["names"] == ["wam"] and len(doc["joint_names"]) == 7
    # Upload and server path give the same id (content, not route).
    by_path = client.create_scene(urdf_path=str(WAM_URDF), srdf_path=str(WAM_SRDF),
                                  package_dirs={"herb_description": str(WAM_DIR)})
    assert by_path.scene_id == doc["scene_id"] and by_path.created is False
    assert by_path.names == ["wam"]
    # Again, as text: the same scene, said so.
    again = create(daemon, "--name", "wam")
    assert again.returncode == 0, again.stderr
    assert f"scene {doc['scene_id']} (robot wam, 7 joints, name wam): already loaded" in again.stdout
    assert "export PROXIMITY_SCENE=wam" in again.stdout


def test_names_work_as_scene_and_in_the_environment(daemon: support.Daemon) -> None:
    assert create(daemon, "--name", "wam").returncode == 0
    by_flag = support.run_cli(daemon, "poses", "--state=0,0,0,0,0,0,0", "--scene", "wam", "--json")
    assert by_flag.returncode == 0, by_flag.stderr
    assert json.loads(by_flag.stdout)["robot"] == "wam"
    by_env = support.run_cli(daemon, "poses", "--state=0,0,0,0,0,0,0", env_extra={"PROXIMITY_SCENE": "wam"})
    assert by_env.returncode == 0, by_env.stderr
    assert "robot wam, 7 joints, name wam" in by_env.stdout
    listed = support.run_cli(daemon, "scene", "list")
    assert listed.returncode == 0 and "name wam" in listed.stdout


def test_a_taken_name_and_a_missing_scene_are_refused_in_plain_words(daemon: support.Daemon, tmp_path) -> None:
    assert create(daemon, "--name", "wam").returncode == 0
    # Other content under the same name.
    other = tmp_path / "wam.urdf"
    other.write_text(WAM_URDF.read_text().replace('lower="-2.6"', 'lower="-2.5"'))
    proc = support.run_cli(daemon, "scene", "create", "--urdf", str(other), "--package",
                           f"herb_description={WAM_DIR}", "--name", "wam")
    assert proc.returncode == 2
    assert "name 'wam' already names scene" in proc.stderr and "--reassign" in proc.stderr, proc.stderr
    moved = support.run_cli(daemon, "scene", "create", "--urdf", str(other), "--package",
                            f"herb_description={WAM_DIR}", "--name", "wam", "--reassign")
    assert moved.returncode == 0, moved.stderr
    # More than the built-in scene loaded and none named: refused, the scenes listed with their names.
    refused = support.run_cli(daemon, "poses", "--state=0,0,0,0,0,0,0")
    assert refused.returncode == 2 and "(name wam)" in refused.stderr, refused.stderr
    # A package map that does not name a folder, and a missing URDF: the file and the flag named.
    bad = support.run_cli(daemon, "scene", "create", "--urdf", str(WAM_URDF), "--package", "herb_description")
    assert bad.returncode == 2 and "NAME=DIR" in bad.stderr
    missing = support.run_cli(daemon, "scene", "create", "--urdf", str(tmp_path / "none.urdf"))
    assert missing.returncode == 2 and "none.urdf: no such file" in missing.stderr
    # A package:// URI nothing resolves: the URI and the flag that fixes it.
    unresolved = support.run_cli(daemon, "scene", "create", "--urdf", str(WAM_URDF))
    assert unresolved.returncode == 2
    assert "package://herb_description/" in unresolved.stderr and "--package herb_description=DIR" in \
        unresolved.stderr, unresolved.stderr
