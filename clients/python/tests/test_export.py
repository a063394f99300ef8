"""`proximity export`: the .glb is parsed here with struct and json alone (not the writer's reader) and
checked for structure (header, chunk lengths and alignment, buffer views within the buffer, accessors
within their views, indices within their vertices) and content (link node transforms equal the link
poses of the urdf_fk oracle, contact highlights name CheckState's pair and mark ComputeContacts' points, animation times follow the
velocity-limit rule)."""
from __future__ import annotations

import json
import math
import struct
from pathlib import Path
from typing import Any, Dict, List, Tuple

import numpy as np
import pytest

import support
from proximity_client import Client, SceneInfo
from urdf_fk import UrdfChain, pose_matrix

KR5 = Path(support.KR5_URDF)
COMPONENTS = {5126: ("<f4", 4), 5125: ("<u4", 4)}
WIDTHS = {"SCALAR": 1, "VEC3": 3, "VEC4": 4}


def parse_glb(data: bytes) -> Tuple[Dict[str, Any], bytes]:
    """The JSON and BIN chunks of a .glb, every structural rule of glTF 2.0's binary container asserted."""
    magic, version, length = struct.unpack_from("<III", data, 0)
    assert magic == 0x46546C67 and version == 2 and length == len(data)
    assert length % 4 == 0
    json_len, json_type = struct.unpack_from("<II", data, 12)
    assert json_type == 0x4E4F534A and json_len % 4 == 0
    doc = json.loads(data[20:20 + json_len].decode("utf-8"))
    offset = 20 + json_len
    binary = b""
    if offset < length:
        bin_len, bin_type = struct.unpack_from("<II", data, offset)
        assert bin_type == 0x004E4942 and bin_len % 4 == 0
        assert offset + 8 + bin_len == length
        binary = data[offset + 8:offset + 8 + bin_len]
    assert doc["asset"]["version"] == "2.0"
    if binary:
        assert len(doc["buffers"]) == 1 and "uri" not in doc["buffers"][0]
        assert doc["buffers"][0]["byteLength"] <= len(binary) < doc["buffers"][0]["byteLength"] + 4
    for view in doc.get("bufferViews", []):
        assert view["byteOffset"] % 4 == 0
        assert view["byteOffset"] + view["byteLength"] <= doc["buffers"][view["buffer"]]["byteLength"]
    for acc in doc.get("accessors", []):
        view = doc["bufferViews"][acc["bufferView"]]
        _, size = COMPONENTS[acc["componentType"]]
        assert acc.get("byteOffset", 0) + acc["count"] * size * WIDTHS[acc["type"]] <= view["byteLength"]
    return doc, binary


def accessor(doc: Dict[str, Any], binary: bytes, index: int) -> np.ndarray:
    acc = doc["accessors"][index]
    view = doc["bufferViews"][acc["bufferView"]]
    dtype, size = COMPONENTS[acc["componentType"]]
    width = WIDTHS[acc["type"]]
    start = view["byteOffset"] + acc.get("byteOffset", 0)
    flat = np.frombuffer(binary, dtype=dtype, count=acc["count"] * width, offset=start)
    return flat.reshape(acc["count"], width) if width > 1 else flat


def check_meshes(doc: Dict[str, Any], binary: bytes) -> int:
    """Every primitive's indices lie within its vertices and POSITION bounds are the data's; the triangles."""
    triangles = 0
    for mesh in doc["meshes"]:
        for prim in mesh["primitives"]:
            assert prim.get("mode", 4) == 4
            pos_acc = doc["accessors"][prim["attributes"]["POSITION"]]
            pos = accessor(doc, binary, prim["attributes"]["POSITION"])
            assert np.allclose(pos.min(axis=0), pos_acc["min"]) and np.allclose(pos.max(axis=0), pos_acc["max"])
            idx = accessor(doc, binary, prim["indices"])
            assert len(idx) % 3 == 0 and idx.max() < len(pos)
            assert doc["bufferViews"][doc["accessors"][prim["indices"]]["bufferView"]].get("target") == 34963
            triangles += len(idx) // 3
            assert 0 <= prim["material"] < len(doc["materials"])
    return triangles


def nodes_by_name(doc: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    return {n["name"]: n for n in doc["nodes"]}


def node_matrix(node: Dict[str, Any]) -> np.ndarray:
    return pose_matrix(np.array(node.get("translation", [0, 0, 0]) + node.get("rotation", [0, 0, 0, 1])))


def material_names(doc: Dict[str, Any], node: Dict[str, Any]) -> List[str]:
    """The materials of a node's part children."""
    out = []
    for c in node.get("children", []):
        child = doc["nodes"][c]
        if "mesh" in child:
            out += [doc["materials"][p["material"]]["name"] for p in doc["meshes"][child["mesh"]]["primitives"]]
    return out


def export(daemon: support.Daemon, tmp_path: Path, *args: str) -> Tuple[int, Dict[str, Any], Dict[str, Any], bytes]:
    out = tmp_path / "scene.glb"
    proc = support.run_cli(daemon, "export", *args, "--out", str(out), "--json")
    assert proc.returncode in (0, 1), proc.stderr
    summary = json.loads(proc.stdout)
    doc, binary = parse_glb(out.read_bytes())
    return proc.returncode, summary, doc, binary


@pytest.fixture(scope="module")
def states(client: Client, info: SceneInfo) -> Dict[str, np.ndarray]:
    """A free state and one colliding with a world object, found by CLEAR on seeded random states."""
    rng = np.random.default_rng(19)
    qs = info.sample(3000, rng)
    r = client.check_states(qs, include_contacts=True)
    free = qs[np.flatnonzero(r.free)[0]]
    world = next(i for i, p in sorted(r.contacts.items()) if not p.self_collision)
    return {"free": free, "colliding": qs[world]}


def base(client: Client) -> np.ndarray:
    """The built-in scene's base pose (the root link in the world), from which the oracle composes the URDF."""
    return pose_matrix(client.link_poses(np.zeros(client.get_scene().dof)).base_pose)


def test_state_export_structure_and_link_transforms(daemon, client, info, states, tmp_path) -> None:
    q = states["free"]
    code, summary, doc, binary = export(daemon, tmp_path, "--state=" + ",".join(map(repr, q.tolist())))
    assert code == 0 and summary["free"] and summary["robot"] == info.robot_name
    triangles = check_meshes(doc, binary)
    geometry = client.scene_geometry()
    assert triangles == geometry.triangles  # each part once (a single state draws every part once)
    nodes = nodes_by_name(doc)
    root = doc["nodes"][doc["scenes"][doc["scene"]]["nodes"][0]]
    assert np.allclose(root["rotation"], [-math.sqrt(0.5), 0, 0, math.sqrt(0.5)])  # z up to glTF's y up
    X_WB = base(client)
    want = UrdfChain(KR5).link_poses(dict(zip(info.joint_names, q)), X_WB)
    for name in info.link_names:
        assert np.allclose(node_matrix(nodes[f"link:{name}"]), want[name], atol=1e-9), name
    # Part nodes at the parts' poses in the link frame; world objects present.
    for link in geometry.links:
        for i, part in enumerate(link.parts):
            assert np.allclose(node_matrix(nodes[f"link:{link.name}/{i}"]), pose_matrix(part.pose), atol=1e-12)
    for obj in info.object_ids:
        assert f"object:{obj}" in nodes
    assert "contacts" not in nodes and "animations" not in doc


def test_colliding_state_highlights_the_pair_and_marks_contacts(daemon, client, info, states, tmp_path) -> None:
    q = states["colliding"]
    code, summary, doc, _ = export(daemon, tmp_path, "--state=" + ",".join(map(repr, q.tolist())))
    assert code == 1 and not summary["free"]
    found = client.contacts(q)
    deepest = found.contacts[0].pair
    assert summary["contact"]["robot"] == deepest.robot and summary["contact"]["other"] == deepest.other
    pair = client.check_state(q).contact  # CLEAR's first pair is among the highlighted ones
    assert {pair.robot, pair.other} <= set(summary["contact"]["parts"])
    nodes = nodes_by_name(doc)
    assert set(material_names(doc, nodes[f"link:{pair.robot}"])) == {"contact"}
    assert set(material_names(doc, nodes[f"object:{pair.other}"])) == {"contact"}
    untouched = [n for n in info.link_names if n not in summary["contact"]["parts"]]
    assert untouched and all(set(material_names(doc, nodes[f"link:{n}"])) <= {"robot"} for n in untouched)
    markers = [doc["nodes"][c] for c in nodes["contacts"]["children"]]
    want = np.unique(np.vstack([c.points for c in found.contacts]), axis=0)  # every pair's contact points
    got = np.array([m["translation"] for m in markers])
    assert got.shape == want.shape and np.allclose(got, want, atol=1e-12)


def test_path_export_animates_the_links_with_velocity_timing(daemon, client, info, states, tmp_path) -> None:
    start, goal = states["free"], states["colliding"]
    path = tmp_path / "path.json"
    path.write_text(json.dumps({"joint_names": info.joint_names, "waypoints": [start.tolist(), goal.tolist()]}))
    code, summary, doc, binary = export(daemon, tmp_path, "--path", str(path), "--step", "0.1")
    assert code == 1 and summary["mode"] == "animation" and not summary["free"]
    check_meshes(doc, binary)
    (anim,) = doc["animations"]
    nodes = nodes_by_name(doc)
    times = accessor(doc, binary, anim["samplers"][0]["input"])
    assert len(times) == summary["samples"] and np.all(np.diff(times) > 0)
    # The velocity rule on the samples, computed here from the URDF's limits.
    chain = UrdfChain(KR5)
    v = np.array([chain.joints[n]["velocity"] for n in info.joint_names])
    n = summary["samples"] - 1
    step = (goal - start) / n
    expected = np.arange(n + 1) * np.max(np.abs(step) / v)
    np.testing.assert_allclose(times, expected, rtol=1e-5, atol=1e-6)
    X_WB = base(client)
    index = {i: doc["nodes"][i]["name"] for i in range(len(doc["nodes"]))}
    for channel in anim["channels"]:
        sampler = anim["samplers"][channel["sampler"]]
        values = accessor(doc, binary, sampler["output"])
        assert len(values) == len(times)
        link = index[channel["target"]["node"]][len("link:"):]
        for k in (0, n // 2, n):
            q = start + k * step
            want = chain.link_poses(dict(zip(info.joint_names, q)), X_WB)[link]
            if channel["target"]["path"] == "translation":
                assert np.allclose(values[k], want[:3, 3], atol=1e-5), (link, k)
            else:
                got = pose_matrix(np.concatenate([[0, 0, 0], values[k]]))[:3, :3]
                assert np.allclose(got, want[:3, :3], atol=1e-5), (link, k)
    assert {c["target"]["path"] for c in anim["channels"]} == {"translation", "rotation"}
    # The colliding state CheckPath reports, with its pair in red.
    q_c = np.array(summary["contact_state"])
    r = client.check_path(np.vstack([start, goal]))
    assert summary["segment"] == r.segment == 0 and summary["t_collide"] == r.motion.t_collide
    np.testing.assert_allclose(q_c, start + r.motion.t_collide * (goal - start), atol=1e-12)
    want = chain.link_poses(dict(zip(info.joint_names, q_c)), X_WB)
    for name in info.link_names:
        assert np.allclose(node_matrix(nodes[f"contact_state/link:{name}"]), want[name], atol=1e-9)
    pair = client.check_state(q_c).contact
    assert set(material_names(doc, nodes[f"contact_state/link:{pair.robot}"])) == {"contact"}
    other = f"contact_state/link:{pair.other}" if pair.self_collision else f"object:{pair.other}"
    assert set(material_names(doc, nodes[other])) == {"contact"}


def test_path_export_as_ghosts(daemon, info, states, tmp_path) -> None:
    path = tmp_path / "path.csv"
    rows = np.vstack([states["free"], states["free"] * 0.5])
    np.savetxt(path, rows, delimiter=",", header=",".join(info.joint_names), comments="")
    code, summary, doc, binary = export(daemon, tmp_path, "--path", str(path), "--ghosts", "4")
    assert summary["mode"] == "ghosts" and "animations" not in doc
    check_meshes(doc, binary)
    ghosts = [n for n in nodes_by_name(doc) if n.startswith("ghost:") and "/" not in n]
    assert len(ghosts) == 4
    ghost_materials = {doc["materials"][p["material"]]["name"]
                       for n in doc["nodes"] if n["name"].startswith("ghost:") and "mesh" in n
                       for p in doc["meshes"][n["mesh"]]["primitives"]}
    assert ghost_materials == {"ghost"}
    assert code == (0 if summary["free"] else 1)


def test_export_errors_are_clear(daemon, info, tmp_path) -> None:
    out = tmp_path / "x.glb"
    proc = support.run_cli(daemon, "export", "--state=" + ",".join(["0"] * (info.dof + 1)), "--out", str(out))
    assert proc.returncode == 2 and "INVALID_ARGUMENT" in proc.stderr and "state" in proc.stderr, proc.stderr
    assert not out.exists()
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"joint_names": ["nope"] * info.dof, "waypoints": [[0.0] * info.dof]}))
    proc = support.run_cli(daemon, "export", "--path", str(bad), "--out", str(out))
    assert proc.returncode == 2 and "does not name joint" in proc.stderr and not out.exists()
