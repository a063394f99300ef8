"""An independent forward-kinematics oracle for the tests: the URDF read with xml.etree and the joint
transforms composed with numpy, sharing no code with the service.

URDF rules used (ROS wiki, urdf/XML/joint): a joint's <origin xyz rpy> places its frame in the parent link
frame, rpy being fixed-axis roll about x, then pitch about y, then yaw about z (R = Rz(yaw) Ry(pitch)
Rx(roll)); <axis xyz> defaults to (1, 0, 0); revolute and continuous joints rotate about the axis,
prismatic ones slide along it; <mimic joint multiplier offset> gives value = multiplier * other + offset.
"""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Dict, List, Mapping, Optional

import numpy as np


def _floats(text: Optional[str], default: List[float]) -> np.ndarray:
    return np.array([float(t) for t in text.split()] if text else default, dtype=np.float64)


def rpy_matrix(r: float, p: float, y: float) -> np.ndarray:
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    return rz @ ry @ rx


def axis_angle(axis: np.ndarray, angle: float) -> np.ndarray:
    """Rodrigues' rotation about a unit axis."""
    k = axis / np.linalg.norm(axis)
    kx = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + math.sin(angle) * kx + (1 - math.cos(angle)) * (kx @ kx)


def transform(rotation: np.ndarray, translation: np.ndarray) -> np.ndarray:
    m = np.eye(4)
    m[:3, :3] = rotation
    m[:3, 3] = translation
    return m


class UrdfChain:
    """Links and joints of a URDF file, for link poses at joint values given by name."""

    def __init__(self, urdf: "str | Path") -> None:
        root = ET.parse(str(urdf)).getroot()
        self.links = [l.get("name") for l in root.findall("link")]
        self.joints: Dict[str, dict] = {}
        for j in root.findall("joint"):
            origin = j.find("origin")
            axis = j.find("axis")
            limit = j.find("limit")
            mimic = j.find("mimic")
            self.joints[j.get("name")] = {
                "type": j.get("type"),
                "parent": j.find("parent").get("link"),
                "child": j.find("child").get("link"),
                "xyz": _floats(origin.get("xyz") if origin is not None else None, [0, 0, 0]),
                "rpy": _floats(origin.get("rpy") if origin is not None else None, [0, 0, 0]),
                "axis": _floats(axis.get("xyz") if axis is not None else None, [1, 0, 0]),
                "velocity": float(limit.get("velocity", 0)) if limit is not None else 0.0,
                "lower": float(limit.get("lower", 0)) if limit is not None else 0.0,
                "upper": float(limit.get("upper", 0)) if limit is not None else 0.0,
                "mimic": None if mimic is None else (mimic.get("joint"), float(mimic.get("multiplier", 1)),
                                                     float(mimic.get("offset", 0))),
            }
        children = {j["child"] for j in self.joints.values()}
        roots = [l for l in self.links if l not in children]
        assert len(roots) == 1, f"{urdf}: expected one root link, found {roots}"
        self.root = roots[0]

    def value(self, name: str, q: Mapping[str, float]) -> float:
        j = self.joints[name]
        if j["mimic"] is not None:
            other, mult, off = j["mimic"]
            return mult * self.value(other, q) + off
        return float(q.get(name, 0.0))

    def link_poses(self, q: Mapping[str, float], base: Optional[np.ndarray] = None) -> Dict[str, np.ndarray]:
        """World pose (4x4) of every link at joint values ``q`` (by name; unnamed joints at 0), the root at
        ``base`` (identity by default)."""
        poses = {self.root: np.eye(4) if base is None else np.asarray(base, dtype=np.float64)}
        pending = list(self.joints.items())
        while pending:
            rest = []
            for name, j in pending:
                if j["parent"] not in poses:
                    rest.append((name, j))
                    continue
                origin = transform(rpy_matrix(*j["rpy"]), j["xyz"])
                motion = np.eye(4)
                if j["type"] in ("revolute", "continuous"):
                    motion[:3, :3] = axis_angle(j["axis"], self.value(name, q))
                elif j["type"] == "prismatic":
                    motion[:3, 3] = j["axis"] / np.linalg.norm(j["axis"]) * self.value(name, q)
                poses[j["child"]] = poses[j["parent"]] @ origin @ motion
            if len(rest) == len(pending):
                raise AssertionError(f"joints not reachable from the root: {[n for n, _ in rest]}")
            pending = rest
        return poses


def pose_matrix(pose7: np.ndarray) -> np.ndarray:
    """[x, y, z, qx, qy, qz, qw] as a 4x4 matrix (its own quaternion formula, for the oracle's side)."""
    x, y, z, w = (float(v) for v in pose7[3:7])
    n = math.sqrt(x * x + y * y + z * z + w * w)
    x, y, z, w = x / n, y / n, z / n, w / n
    r = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                  [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                  [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])
    return transform(r, np.asarray(pose7[:3], dtype=np.float64))
