"""`proximity scene cloud ID FILE` against a real proximityd: point files of every kind (.npy, .ply ascii
and binary big endian, .pcd ascii, binary and binary_compressed) written here from known points become a
world object of a new scene version. Oracle: the same points sent by the library
(`geometry.point_cloud`) to the same parent scene; `check-states` on the CLI's scene must answer as
`Client.check_states` does there, and block states the parent leaves free. --replace refreshes the cloud,
--frame/--state poses it in a link frame, and bad files exit 2 naming the file."""
from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Callable, Dict

import numpy as np
import pytest

import support
from proximity_client import Client, SceneInfo, geometry

RADIUS = 0.02


def _points_near_robot(rng: np.random.Generator, n: int) -> np.ndarray:
    """Points in a shell around the default robot's base (float32 values: what every format holds exactly)."""
    d = rng.normal(size=(n, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    p = d * rng.uniform(0.35, 0.8, size=(n, 1))
    p[:, 2] = np.abs(p[:, 2]) + 0.05
    return p.astype(np.float32).astype(np.float64)


def _npy(path: Path, p: np.ndarray) -> None:
    np.save(path, p)


def _ply_ascii(path: Path, p: np.ndarray) -> None:
    head = f"ply\nformat ascii 1.0\nelement vertex {len(p)}\nproperty float x\nproperty float y\nproperty float z\n" \
           "property uchar red\nelement face 1\nproperty list uchar int vertex_indices\nend_header\n"
    path.write_text(head + "".join(f"{x!r} {y!r} {z!r} 200\n" for x, y, z in p.tolist()) + "3 0 1 2\n")


def _ply_big_endian(path: Path, p: np.ndarray) -> None:
    head = f"ply\nformat binary_big_endian 1.0\nelement vertex {len(p)}\nproperty double nx\nproperty float x\n" \
           "property float y\nproperty float z\nend_header\n".encode()
    path.write_bytes(head + b"".join(struct.pack(">dfff", 0.5, *row) for row in p.tolist()))


def _pcd_head(n: int, data: str) -> bytes:
    return (f"# .PCD v0.7\nVERSION 0.7\nFIELDS x y z rgb intensity\nSIZE 4 4 4 4 2\nTYPE F F F U U\nCOUNT 1 1 1 1 1\n"
            f"WIDTH {n}\nHEIGHT 1\nVIEWPOINT 0 0 0 1 0 0 0\nPOINTS {n}\nDATA {data}\n").encode()


def _pcd_ascii(path: Path, p: np.ndarray) -> None:
    path.write_bytes(_pcd_head(len(p), "ascii") + "".join(f"{x!r} {y!r} {z!r} 4286611584 7\n"
                                                         for x, y, z in p.tolist()).encode())


def _pcd_binary(path: Path, p: np.ndarray) -> None:
    path.write_bytes(_pcd_head(len(p), "binary") + b"".join(struct.pack("<fffIH", *row, 1, 2) for row in p.tolist()))


def _pcd_compressed(path: Path, p: np.ndarray) -> None:
    n = len(p)
    raw = (struct.pack(f"<{n}f", *p[:, 0]) + struct.pack(f"<{n}f", *p[:, 1]) + struct.pack(f"<{n}f", *p[:, 2])
           + struct.pack(f"<{n}I", *[5] * n) + struct.pack(f"<{n}H", *[9] * n))
    packed = b"".join(bytes([len(raw[i:i + 32]) - 1]) + raw[i:i + 32] for i in range(0, len(raw), 32))  # literal runs
    path.write_bytes(_pcd_head(n, "binary_compressed") + struct.pack("<II", len(packed), len(raw)) + packed)


WRITERS: Dict[str, Callable[[Path, np.ndarray], None]] = {
    "a.npy": _npy, "ascii.ply": _ply_ascii, "big.ply": _ply_big_endian, "ascii.pcd": _pcd_ascii,
    "binary.pcd": _pcd_binary, "compressed.pcd": _pcd_compressed}


@pytest.fixture(scope="module")
def states(client: Client, info: SceneInfo) -> np.ndarray:
    """Random states free in the built-in scene: what a cloud blocks among them is the cloud's doing."""
    rng = np.random.default_rng(29)
    s = info.sample(4000, rng)
    return s[client.check_states(s, scene=info.scene_id)][:300]


def _cli_cloud(daemon: support.Daemon, *args: str) -> dict:
    proc = support.run_cli(daemon, "scene", "cloud", *args, "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _check_states_cli(daemon: support.Daemon, tmp_path: Path, states: np.ndarray, scene: str) -> dict:
    f = tmp_path / "states.npy"
    np.save(f, states)
    proc = support.run_cli(daemon, "check-states", str(f), "--scene", scene, "--json")
    assert proc.returncode in (0, 1), proc.stderr
    doc = json.loads(proc.stdout)
    assert proc.returncode == (0 if doc["colliding"] == 0 else 1)
    return doc


@pytest.mark.parametrize("name", sorted(WRITERS))
def test_every_point_file_kind_blocks_what_the_same_points_block(daemon: support.Daemon, client: Client,
                                                                 info: SceneInfo, states: np.ndarray,
                                                                 tmp_path: Path, name: str) -> None:
    rng = np.random.default_rng(sum(map(ord, name)))
    p = _points_near_robot(rng, 40)
    WRITERS[name](tmp_path / name, p)
    doc = _cli_cloud(daemon, "cam", str(tmp_path / name), "--radius", str(RADIUS), "--scene", info.scene_id)
    assert doc["cloud"]["points"] == 40 and doc["cloud"]["nan_dropped"] == 0 and not doc["cloud"]["replaced"]
    assert doc["version"] == info.version + 1 and "cam" in doc["objects"]
    assert doc["cloud"]["format"].split()[0] == name.split(".")[1]
    # The oracle: the known points sent by the library to the same scene.
    direct = client.update_world(add=[geometry.point_cloud("cam", p, radius=RADIUS)], scene=info.scene_id)
    expect = client.check_states(states, scene=direct.scene_id)
    assert 0 < expect.sum() < len(states), "the cloud should block some of the states and not others"
    answered = _check_states_cli(daemon, tmp_path, states, doc["scene_id"])
    np.testing.assert_array_equal(np.array(answered["free_mask"]), expect)
    np.testing.assert_array_equal(client.check_states(states, scene=doc["scene_id"]), expect)
    # The parent scene is unchanged: every state free there.
    assert _check_states_cli(daemon, tmp_path, states, info.scene_id)["colliding"] == 0


def test_replace_link_frames_warnings_and_text(daemon: support.Daemon, client: Client, info: SceneInfo,
                                               states: np.ndarray, tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    p = _points_near_robot(rng, 300)
    np.save(tmp_path / "near.npy", p)
    first = _cli_cloud(daemon, "cam", str(tmp_path / "near.npy"), "--radius", str(RADIUS), "--scene", info.scene_id)
    blocked = client.check_states(states, scene=first["scene_id"])
    assert blocked.sum() < len(states)
    # The same id again without --replace: refused, saying how; with it, the far cloud blocks nothing.
    np.save(tmp_path / "far.npy", p + np.array([20.0, 0.0, 0.0]))
    again = support.run_cli(daemon, "scene", "cloud", "cam", str(tmp_path / "far.npy"), "--radius", str(RADIUS),
                            "--scene", first["scene_id"])
    assert again.returncode == 2 and "already has an object 'cam'; add --replace" in again.stderr, again.stderr
    fresh = _cli_cloud(daemon, "cam", str(tmp_path / "far.npy"), "--radius", str(RADIUS), "--replace",
                       "--scene", first["scene_id"])
    assert fresh["cloud"]["replaced"] and fresh["version"] == first["version"] + 1
    assert fresh["objects"].count("cam") == 1
    assert _check_states_cli(daemon, tmp_path, states, fresh["scene_id"])["colliding"] == 0
    # Back near with --replace, as text: the new scene line, the id to use.
    proc = support.run_cli(daemon, "scene", "cloud", "cam", str(tmp_path / "near.npy"), "--radius", str(RADIUS),
                           "--replace", "--scene", fresh["scene_id"])
    assert proc.returncode == 0, proc.stderr
    assert "cloud 'cam' replaced (300 points from" in proc.stdout and "use it with --scene " in proc.stdout
    sid = proc.stdout.split("use it with --scene ")[1].split()[0]
    np.testing.assert_array_equal(client.check_states(states, scene=sid), blocked)
    # A link frame at a state: as the library sends it.
    q = states[0]
    link = info.link_names[3]
    local = _points_near_robot(rng, 300) - np.array([0.0, 0.0, 0.3])
    np.save(tmp_path / "local.npy", local)
    state = ",".join(repr(float(v)) for v in q)
    doc = _cli_cloud(daemon, "gripper_cam", str(tmp_path / "local.npy"), "--radius", str(RADIUS), "--frame", link,
                     f"--state={state}", "--voxel-size", "0", "--scene", info.scene_id)
    direct = client.update_world(add=[geometry.point_cloud("gripper_cam", local, frame=link, radius=RADIUS, state=q,
                                                           voxel_size=0.0)], scene=info.scene_id)
    expect = client.check_states(states, scene=direct.scene_id)
    assert expect.sum() < len(states)
    np.testing.assert_array_equal(client.check_states(states, scene=doc["scene_id"]), expect)
    # NaN points: dropped, one warning line naming the file and the count.
    holes = p.copy()
    holes[[2, 40, 41]] = np.nan
    np.save(tmp_path / "holes.npy", holes)
    proc = support.run_cli(daemon, "scene", "cloud", "cam", str(tmp_path / "holes.npy"), "--radius", str(RADIUS),
                           "--scene", info.scene_id, "--json")
    assert proc.returncode == 0, proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if line.startswith("warning:")]
    assert warnings == [f"warning: {tmp_path / 'holes.npy'}: 3 point(s) with NaN coordinates dropped"], proc.stderr
    assert json.loads(proc.stdout)["cloud"]["points"] == 297
    # --move-names: a name follows the newest world.
    assert support.run_cli(daemon, "scene", "name", "cell", "--scene", first["scene_id"]).returncode == 0
    moved = _cli_cloud(daemon, "cam", str(tmp_path / "far.npy"), "--radius", str(RADIUS), "--replace", "--move-names",
                       "--scene", "cell")
    assert moved["names"] == ["cell"] and moved["parent_scene_id"] == first["scene_id"]
    assert client.get_scene("cell").scene_id == moved["scene_id"]


def test_bad_files_and_arguments_exit_2_naming_them(daemon: support.Daemon, info: SceneInfo, tmp_path: Path) -> None:
    p = _points_near_robot(np.random.default_rng(3), 20)
    _pcd_binary(tmp_path / "cut.pcd", p)
    (tmp_path / "cut.pcd").write_bytes((tmp_path / "cut.pcd").read_bytes()[:-7])
    (tmp_path / "noz.ply").write_text("ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nproperty float y\n"
                                      "end_header\n1 2\n")
    np.save(tmp_path / "flat.npy", np.zeros(5))
    np.save(tmp_path / "allnan.npy", np.full((4, 3), np.nan))
    cases = {"cut.pcd": "truncated: DATA binary", "noz.ply": "the vertex element has no z property",
             "flat.npy": "shape (5,)", "allnan.npy": "no points but NaN ones", "none.pcd": "cannot be read"}
    for name, words in cases.items():
        proc = support.run_cli(daemon, "scene", "cloud", "cam", str(tmp_path / name), "--radius", "0.01",
                               "--scene", info.scene_id)
        assert proc.returncode == 2, (name, proc.stdout, proc.stderr)
        assert f"proximity: error: {tmp_path / name}: " in proc.stderr and words in proc.stderr, proc.stderr
    np.save(tmp_path / "ok.npy", p)
    for extra, words in ((["--self-filter", "0.01"], "--self-filter needs --state"),
                         (["--frame", "no_such_link", "--state=0,0,0,0,0,0"], "'no_such_link' is neither"),
                         (["--radius", "-1"], "radius")):
        proc = support.run_cli(daemon, "scene", "cloud", "cam", str(tmp_path / "ok.npy"), "--radius", "0.01",
                               "--scene", info.scene_id, *extra)
        assert proc.returncode == 2 and words in proc.stderr, (extra, proc.stderr)
