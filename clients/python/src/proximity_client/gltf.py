"""A scene, a state or a path as a glTF 2.0 binary (.glb), written with numpy and struct alone.

The node tree (names are stable, so that tools and tests can find things):

* ``robot``: one node per link, ``link:<name>``, at the link's world pose (translation, rotation), with
  one child per geometry part (``link:<name>/<i>``) at the part's pose in the link frame; attached objects
  hang below their link as ``attached:<id>``. For a path, an animation moves the link nodes through the
  path (one keyframe per sample, linear).
* ``world``: ``object:<id>`` per world object, parts at their world poses.
* ``ghost:<k>``: strip-of-ghosts mode, copies of the robot at states along the path (translucent).
* ``contact_state``: the robot at the state in contact (the state itself, or the colliding state of a
  path), the colliding links (and attached or world objects) in the contact colour.
* ``contacts``: a small marker ``contact:<k>`` at each contact point.

Names hold ``:`` and ``/``, which some loaders strip (three.js's GLTFLoader): every link, object and
attached object node also carries ``extras`` ``{"kind": "link" | "object" | "attached", "name": <scene
name>}``, plus ``"copy": "ghost:<k>" | "contact_state"`` on the copies, which loaders keep (three.js: in
``userData``).

Units are metres; glTF's +Y up is not imposed: the scene keeps the robot's frame (z up), and a root
node ``proximity`` rotates it so that z points up in glTF viewers (its rotation is the only one that is
not a pose from the scene). Colours: robot grey, world blue, contact red, contact points yellow.
"""
from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .results import GeometryGroup, GeometryPart, SceneGeometry

GLB_MAGIC = 0x46546C67  # "glTF"
CHUNK_JSON = 0x4E4F534A  # "JSON"
CHUNK_BIN = 0x004E4942  # "BIN\0"

_FLOAT, _UINT32 = 5126, 5125
_ARRAY_BUFFER, _ELEMENT_ARRAY_BUFFER = 34962, 34963
#: z up (the robot's world) to glTF's y up: a rotation of -90 degrees about x.
Z_UP_TO_Y_UP = [-math.sqrt(0.5), 0.0, 0.0, math.sqrt(0.5)]

_MATERIALS = {
    "robot": ([0.72, 0.74, 0.78, 1.0], None),
    "world": ([0.49, 0.62, 0.79, 1.0], None),
    "contact": ([0.88, 0.19, 0.17, 1.0], None),
    "point": ([1.0, 0.83, 0.0, 1.0], [1.0, 0.83, 0.0]),
    "ghost": ([0.72, 0.74, 0.78, 0.3], None),
}


@dataclass
class Contact:
    """What is in contact at a state: the names of the parts (links, attached or world objects) and the
    contact points (world frame, metres)."""

    names: Tuple[str, ...]
    points: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))


class _Builder:
    """Accumulates buffer views, accessors, meshes, materials and nodes, then packs them."""

    def __init__(self) -> None:
        self.bin = bytearray()
        self.doc: Dict[str, Any] = {
            "asset": {"version": "2.0", "generator": "proximity export"},
            "buffers": [], "bufferViews": [], "accessors": [], "meshes": [], "materials": [], "nodes": [],
            "scenes": [], "scene": 0,
        }
        self._materials: Dict[str, int] = {}
        self._part_accessors: Dict[int, Tuple[int, int]] = {}
        self._meshes: Dict[Tuple[int, str], int] = {}

    def _view(self, data: bytes, target: Optional[int]) -> int:
        while len(self.bin) % 4:
            self.bin.append(0)
        view: Dict[str, Any] = {"buffer": 0, "byteOffset": len(self.bin), "byteLength": len(data)}
        if target is not None:
            view["target"] = target
        self.bin.extend(data)
        self.doc["bufferViews"].append(view)
        return len(self.doc["bufferViews"]) - 1

    def accessor(self, array: np.ndarray, kind: str, target: Optional[int] = None, bounds: bool = False) -> int:
        """An accessor over a new buffer view holding ``array`` (float32 or uint32)."""
        array = np.ascontiguousarray(array)
        component = _UINT32 if array.dtype == np.uint32 else _FLOAT
        if component == _FLOAT:
            array = array.astype("<f4")
        else:
            array = array.astype("<u4")
        width = {"SCALAR": 1, "VEC3": 3, "VEC4": 4}[kind]
        count = array.size // width
        acc: Dict[str, Any] = {"bufferView": self._view(array.tobytes(), target), "componentType": component,
                               "count": int(count), "type": kind}
        if bounds and count:
            flat = array.reshape(count, width)
            acc["min"] = [float(x) for x in flat.min(axis=0)]
            acc["max"] = [float(x) for x in flat.max(axis=0)]
        self.doc["accessors"].append(acc)
        return len(self.doc["accessors"]) - 1

    def material(self, name: str) -> int:
        if name not in self._materials:
            color, emissive = _MATERIALS[name]
            m: Dict[str, Any] = {"name": name, "doubleSided": True,
                                 "pbrMetallicRoughness": {"baseColorFactor": color, "metallicFactor": 0.0,
                                                          "roughnessFactor": 0.8}}
            if color[3] < 1.0:
                m["alphaMode"] = "BLEND"
            if emissive is not None:
                m["emissiveFactor"] = emissive
            self.doc["materials"].append(m)
            self._materials[name] = len(self.doc["materials"]) - 1
        return self._materials[name]

    def mesh(self, part: GeometryPart, material: str) -> Optional[int]:
        """The mesh of ``part`` in ``material``; parts share their vertex and index accessors."""
        if len(part.triangles) == 0:
            return None
        key = id(part)
        if key not in self._part_accessors:
            positions = self.accessor(part.vertices.astype(np.float32), "VEC3", _ARRAY_BUFFER, bounds=True)
            indices = self.accessor(part.triangles.astype(np.uint32).ravel(), "SCALAR", _ELEMENT_ARRAY_BUFFER)
            self._part_accessors[key] = (positions, indices)
        if (key, material) not in self._meshes:
            positions, indices = self._part_accessors[key]
            self.doc["meshes"].append({"primitives": [{"attributes": {"POSITION": positions}, "indices": indices,
                                                       "material": self.material(material), "mode": 4}]})
            self._meshes[(key, material)] = len(self.doc["meshes"]) - 1
        return self._meshes[(key, material)]

    def node(self, name: str, pose: Optional[np.ndarray] = None, mesh: Optional[int] = None,
             children: Sequence[int] = (), extras: Optional[Dict[str, Any]] = None) -> int:
        n: Dict[str, Any] = {"name": name}
        if extras:
            n["extras"] = extras
        if pose is not None:
            n["translation"] = [float(v) for v in pose[:3]]
            n["rotation"] = [float(v) for v in pose[3:7]]
        if mesh is not None:
            n["mesh"] = mesh
        if children:
            n["children"] = list(children)
        self.doc["nodes"].append(n)
        return len(self.doc["nodes"]) - 1

    def group(self, prefix: str, group: GeometryGroup, material: str) -> List[int]:
        """The part nodes of a group (``<prefix>/<i>``)."""
        out = []
        for i, part in enumerate(group.parts):
            mesh = self.mesh(part, material)
            if mesh is not None:
                out.append(self.node(f"{prefix}/{i}", part.pose, mesh))
        return out

    def pack(self) -> bytes:
        while len(self.bin) % 4:
            self.bin.append(0)
        self.doc["buffers"] = [{"byteLength": len(self.bin)}]
        for key in ("meshes", "materials", "accessors", "bufferViews"):
            if not self.doc[key]:
                del self.doc[key]
        if not self.bin:
            del self.doc["buffers"]
        text = json.dumps(self.doc, separators=(",", ":")).encode("utf-8")
        text += b" " * (-len(text) % 4)
        chunks = struct.pack("<II", len(text), CHUNK_JSON) + text
        if self.bin:
            chunks += struct.pack("<II", len(self.bin), CHUNK_BIN) + bytes(self.bin)
        return struct.pack("<III", GLB_MAGIC, 2, 12 + len(chunks)) + chunks


def _robot(b: _Builder, geometry: SceneGeometry, names: Sequence[str], poses: np.ndarray, prefix: str,
           material: str, contact: Optional[Contact] = None) -> Tuple[List[int], Dict[str, int]]:
    """Nodes for the links at ``poses`` (links, 7), named with ``prefix``; returns them and the link nodes by
    name."""
    touching = set(contact.names) if contact is not None else set()
    attached: Dict[str, List[GeometryGroup]] = {}
    for a in geometry.attached_objects:
        attached.setdefault(a.link, []).append(a)
    link_nodes: Dict[str, int] = {}
    children = []
    for k, name in enumerate(names):
        group = next((g for g in geometry.links if g.name == name), None)
        parts = b.group(f"{prefix}link:{name}", group, "contact" if name in touching else material) if group else []
        copy = {"copy": prefix.rstrip("/")} if prefix else {}
        for a in attached.get(name, []):
            a_parts = b.group(f"{prefix}attached:{a.name}", a, "contact" if a.name in touching else material)
            parts.append(b.node(f"{prefix}attached:{a.name}", None, None, a_parts,
                                {"kind": "attached", "name": a.name, **copy}))
        link_nodes[name] = b.node(f"{prefix}link:{name}", poses[k], None, parts, {"kind": "link", "name": name, **copy})
        children.append(link_nodes[name])
    return children, link_nodes


def build_glb(geometry: SceneGeometry, link_names: Sequence[str], poses: np.ndarray, *,
              times: Optional[np.ndarray] = None, ghosts: Optional[Sequence[int]] = None,
              contact: Optional[Contact] = None, contact_poses: Optional[np.ndarray] = None,
              name: str = "proximity") -> bytes:
    """The .glb bytes of a scene with its robot at ``poses`` (frames, links, 7), link order ``link_names``.

    One frame: the robot at that state. Several: with ``times`` (seconds, one per frame, increasing), an
    animation of the link nodes (the robot node starts at frame 0); with ``ghosts`` (frame indices), a
    strip of translucent robots at those frames. ``contact`` highlights the parts in contact and marks the
    contact points; ``contact_poses`` (links, 7) adds the robot at the state in contact (for a path).
    """
    poses = np.asarray(poses, dtype=np.float64)
    if poses.ndim != 3 or poses.shape[1] != len(link_names) or poses.shape[2] != 7 or poses.shape[0] == 0:
        raise ValueError(f"poses must have shape (frames, {len(link_names)}, 7), got {poses.shape}")
    b = _Builder()
    top: List[int] = []
    single = poses.shape[0] == 1 and contact_poses is None
    robot_children, link_nodes = _robot(b, geometry, link_names, poses[0], "", "robot",
                                        contact if single else None)
    top.append(b.node("robot", None, None, robot_children))

    touching = set(contact.names) if contact is not None else set()
    world = []
    for obj in geometry.objects:
        parts = b.group(f"object:{obj.name}", obj, "contact" if obj.name in touching else "world")
        world.append(b.node(f"object:{obj.name}", None, None, parts, {"kind": "object", "name": obj.name}))
    top.append(b.node("world", None, None, world))

    for k in ghosts or ():
        children, _ = _robot(b, geometry, link_names, poses[k], f"ghost:{k}/", "ghost")
        top.append(b.node(f"ghost:{k}", None, None, children))
    if contact_poses is not None:
        children, _ = _robot(b, geometry, link_names, np.asarray(contact_poses, dtype=np.float64), "contact_state/",
                             "robot", contact)
        top.append(b.node("contact_state", None, None, children))
    if contact is not None and len(contact.points):
        marker = _marker_part(geometry)
        mesh = b.mesh(marker, "point")
        markers = [b.node(f"contact:{i}", np.concatenate([p, [0.0, 0.0, 0.0, 1.0]]), mesh)
                   for i, p in enumerate(np.asarray(contact.points, dtype=np.float64).reshape(-1, 3))]
        top.append(b.node("contacts", None, None, markers))

    if times is not None and poses.shape[0] > 1:
        times = np.asarray(times, dtype=np.float64)
        if times.shape != (poses.shape[0],) or np.any(np.diff(times) <= 0):
            raise ValueError("times must be strictly increasing, one per frame")
        inp = b.accessor(times.astype(np.float32), "SCALAR", bounds=True)
        samplers, channels = [], []
        for k, link in enumerate(link_names):
            node = link_nodes[link]
            for path, width, cols in (("translation", "VEC3", slice(0, 3)), ("rotation", "VEC4", slice(3, 7))):
                out = b.accessor(poses[:, k, cols].astype(np.float32).ravel(), width)
                samplers.append({"input": inp, "output": out, "interpolation": "LINEAR"})
                channels.append({"sampler": len(samplers) - 1, "target": {"node": node, "path": path}})
        b.doc["animations"] = [{"name": "path", "samplers": samplers, "channels": channels}]

    root = b.node(name, np.array([0.0, 0.0, 0.0, *Z_UP_TO_Y_UP]), None, top)
    b.doc["scenes"] = [{"name": name, "nodes": [root]}]
    return b.pack()


def _marker_part(geometry: SceneGeometry) -> GeometryPart:
    """An octahedron for the contact points, sized to the scene (1 % of its extent, at least 5 mm)."""
    pts = [p.vertices for g in geometry.links for p in g.parts if len(p.vertices)]
    extent = float(np.ptp(np.vstack(pts), axis=0).max()) if pts else 1.0
    r = max(0.005, 0.01 * extent)
    v = np.array([[r, 0, 0], [-r, 0, 0], [0, r, 0], [0, -r, 0], [0, 0, r], [0, 0, -r]], dtype=np.float64)
    t = np.array([[0, 2, 4], [2, 1, 4], [1, 3, 4], [3, 0, 4], [2, 0, 5], [1, 2, 5], [3, 1, 5], [0, 3, 5]],
                 dtype=np.uint32)
    return GeometryPart(v, t, np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]), "marker")


def read_glb(data: bytes) -> Tuple[Dict[str, Any], bytes]:
    """The JSON document and the binary chunk of .glb bytes (checks the header and the chunk framing)."""
    if len(data) < 20:
        raise ValueError("too short for a glTF binary")
    magic, version, length = struct.unpack_from("<III", data, 0)
    if magic != GLB_MAGIC or version != 2 or length != len(data):
        raise ValueError(f"not a glTF 2.0 binary (magic {magic:#x}, version {version}, length {length}/{len(data)})")
    json_len, json_type = struct.unpack_from("<II", data, 12)
    if json_type != CHUNK_JSON:
        raise ValueError("the first chunk is not JSON")
    doc = json.loads(data[20:20 + json_len].decode("utf-8"))
    offset = 20 + json_len
    binary = b""
    if offset < len(data):
        bin_len, bin_type = struct.unpack_from("<II", data, offset)
        if bin_type != CHUNK_BIN:
            raise ValueError("the second chunk is not BIN")
        binary = data[offset + 8:offset + 8 + bin_len]
    return doc, binary


__all__ = ["Contact", "build_glb", "read_glb", "Z_UP_TO_Y_UP"]
