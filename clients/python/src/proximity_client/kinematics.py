"""Poses and path timing on the client: pose arrays as matrices, and time stamps for a path from the joints'
velocity limits (the rule the server's Plan uses for ``time_from_start``).

A pose is ``[x, y, z, qx, qy, qz, qw]``: a position in metres and a unit quaternion, w last as in
geometry_msgs.
"""
from __future__ import annotations

import math
from typing import Optional, Sequence

import numpy as np


def read_joint_limits(path: str) -> dict:
    """MoveIt's ``joint_limits.yaml`` as ``{joint: {"max_velocity": v, "max_acceleration": a}}`` (values that
    its ``has_velocity_limits`` / ``has_acceleration_limits`` switch off, or that are absent, left out), for
    :meth:`Client.plan`'s ``joint_limits``. Raises ValueError naming the file and the entry at fault."""
    import yaml  # Debian's python3-yaml

    with open(path) as f:
        doc = yaml.safe_load(f) or {}
    entries = doc.get("joint_limits", doc) if isinstance(doc, dict) else None
    if not isinstance(entries, dict):
        raise ValueError(f"{path}: expected a mapping joint_limits: {{joint: {{max_velocity, max_acceleration}}}}")
    out = {}
    for name, e in entries.items():
        if not isinstance(e, dict):
            raise ValueError(f"{path}: joint_limits.{name} is not a mapping")
        limit = {}
        for kind in ("velocity", "acceleration"):
            if e.get(f"has_{kind}_limits", f"max_{kind}" in e) and f"max_{kind}" in e:
                value = float(e[f"max_{kind}"])
                if not math.isfinite(value) or value < 0:
                    raise ValueError(f"{path}: joint_limits.{name}.max_{kind} must be finite and >= 0, got {value}")
                limit[f"max_{kind}"] = value
        out[str(name)] = limit
    return out


def quaternion_matrices(q: np.ndarray) -> np.ndarray:
    """Rotation matrices of unit quaternions ``[..., (x, y, z, w)]``, shape ``[..., 3, 3]``."""
    q = np.asarray(q, dtype=np.float64)
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    x, y, z, w = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    r = np.empty(q.shape[:-1] + (3, 3))
    r[..., 0, 0] = 1 - 2 * (y * y + z * z)
    r[..., 0, 1] = 2 * (x * y - z * w)
    r[..., 0, 2] = 2 * (x * z + y * w)
    r[..., 1, 0] = 2 * (x * y + z * w)
    r[..., 1, 1] = 1 - 2 * (x * x + z * z)
    r[..., 1, 2] = 2 * (y * z - x * w)
    r[..., 2, 0] = 2 * (x * z - y * w)
    r[..., 2, 1] = 2 * (y * z + x * w)
    r[..., 2, 2] = 1 - 2 * (x * x + y * y)
    return r


def pose_matrices(poses: np.ndarray) -> np.ndarray:
    """Homogeneous matrices of poses ``[..., 7]``, shape ``[..., 4, 4]``."""
    poses = np.asarray(poses, dtype=np.float64)
    m = np.zeros(poses.shape[:-1] + (4, 4))
    m[..., :3, :3] = quaternion_matrices(poses[..., 3:7])
    m[..., :3, 3] = poses[..., :3]
    m[..., 3, 3] = 1.0
    return m


def matrix_pose(m: np.ndarray) -> np.ndarray:
    """The pose ``[x, y, z, qx, qy, qz, qw]`` (w >= 0) of one homogeneous matrix."""
    r = np.asarray(m, dtype=np.float64)[:3, :3]
    t = np.asarray(m, dtype=np.float64)[:3, 3]
    trace = r[0, 0] + r[1, 1] + r[2, 2]
    if trace > 0:
        s = 2.0 * math.sqrt(trace + 1.0)
        q = [(r[2, 1] - r[1, 2]) / s, (r[0, 2] - r[2, 0]) / s, (r[1, 0] - r[0, 1]) / s, 0.25 * s]
    elif r[0, 0] > r[1, 1] and r[0, 0] > r[2, 2]:
        s = 2.0 * math.sqrt(1.0 + r[0, 0] - r[1, 1] - r[2, 2])
        q = [0.25 * s, (r[0, 1] + r[1, 0]) / s, (r[0, 2] + r[2, 0]) / s, (r[2, 1] - r[1, 2]) / s]
    elif r[1, 1] > r[2, 2]:
        s = 2.0 * math.sqrt(1.0 + r[1, 1] - r[0, 0] - r[2, 2])
        q = [(r[0, 1] + r[1, 0]) / s, 0.25 * s, (r[1, 2] + r[2, 1]) / s, (r[0, 2] - r[2, 0]) / s]
    else:
        s = 2.0 * math.sqrt(1.0 + r[2, 2] - r[0, 0] - r[1, 1])
        q = [(r[0, 2] + r[2, 0]) / s, (r[1, 2] + r[2, 1]) / s, 0.25 * s, (r[1, 0] - r[0, 1]) / s]
    qa = np.array(q)
    qa /= np.linalg.norm(qa)
    if qa[3] < 0:
        qa = -qa
    return np.concatenate([t, qa])


def shortest_turn(delta: np.ndarray) -> np.ndarray:
    """The turn equivalent to ``delta`` (rad) on a continuous joint that goes the short way round: delta
    itself where |delta| <= pi, otherwise delta minus the nearest multiple of 2 pi (the core's ShortestTurn)."""
    d = np.asarray(delta, dtype=np.float64)
    return np.where(np.abs(d) <= math.pi, d, np.remainder(d + math.pi, 2 * math.pi) - math.pi)


def time_from_start(path: np.ndarray, velocity: Sequence[float],
                    continuous: Optional[Sequence[bool]] = None) -> Optional[np.ndarray]:
    """When each waypoint of ``path`` ((n, dof), the scene's joint order) is reached, in seconds from 0, if
    every segment takes the least time the joints' velocity limits allow: segment i -> i + 1 lasts
    ``max_j |path[i+1, j] - path[i, j]| / velocity[j]`` over the joints with a limit (``velocity[j] > 0``;
    the others do not count, and a segment that moves no limited joint lasts 0 s), the joints flagged in
    ``continuous`` turning the short way (:func:`shortest_turn`, as every motion query moves them). The
    joints move together and accelerations are not limited, so the times are a lower bound on a real
    execution.

    Returns None when no joint has a velocity limit. This is the rule of ``PlanResult.time_from_start``.
    """
    path = np.asarray(path, dtype=np.float64)
    v = np.asarray(velocity, dtype=np.float64)
    if path.ndim != 2 or path.shape[1] != v.shape[0]:
        raise ValueError(f"path of shape {path.shape} does not match {v.shape[0]} velocity limits")
    limited = np.isfinite(v) & (v > 0)
    if not limited.any():
        return None
    if path.shape[0] == 0:
        return np.zeros(0)
    deltas = np.diff(path, axis=0)
    if continuous is not None:
        wraps = np.asarray(continuous, dtype=bool)
        deltas[:, wraps] = shortest_turn(deltas[:, wraps])
    steps = np.abs(deltas)[:, limited] / v[limited]
    durations = steps.max(axis=1) if steps.size else np.zeros(path.shape[0] - 1)
    return np.concatenate([[0.0], np.cumsum(durations)])


__all__ = ["quaternion_matrices", "pose_matrices", "matrix_pose", "shortest_turn", "time_from_start"]
