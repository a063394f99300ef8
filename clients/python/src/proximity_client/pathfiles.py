"""Reading paths and configurations from files: JSON, CSV and NumPy ``.npy``.

* ``.json``: ``{"joint_names": [...], "waypoints": [[...], ...]}`` (one path), ``{"paths": [{...}, ...]}``
  (several; a top-level ``joint_names`` applies to paths without their own), a bare list of waypoints, or
  for states ``{"joint_names": [...], "states": [[...], ...]}``. A path may also be shaped like a ROS
  ``trajectory_msgs/JointTrajectory``: ``{"joint_names": [...], "points": [{"positions": [...]}, ...]}``
  (other point fields are ignored), or a ``moveit_msgs/RobotTrajectory`` holding one
  (``{"joint_trajectory": {...}}``).
* ``.csv``: an optional header row of joint names, then one configuration per row; ``#`` starts a comment.
* ``.npy``: shape (n, dof) (one path, or n states) or (k, n, dof) (k paths), in the scene's joint order.
"""
from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, List, Optional

import numpy as np


class PathFileError(ValueError):
    """A file cannot be read as paths or configurations; the message names the file and the problem."""


@dataclass
class PathSpec:
    """One path read from a file."""

    source: str                        #: "file" or "file#i" when the file holds several paths
    waypoints: np.ndarray              #: (n, dof)
    joint_names: Optional[List[str]]   #: column order, or None for the scene's joint order

    def as_request(self) -> dict:
        """The mapping form Client.validate_paths accepts."""
        return {"joint_names": self.joint_names, "waypoints": self.waypoints}


def _matrix(rows: Any, where: str, width: Optional[int] = None) -> np.ndarray:
    try:
        arr = np.asarray(rows, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise PathFileError(f"{where}: waypoints must be rows of numbers ({e})") from None
    if arr.ndim == 1 and arr.size:
        arr = arr.reshape(1, -1)
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] == 0:
        raise PathFileError(f"{where}: expected a non-empty list of equally long rows, got shape {arr.shape}")
    if width is not None and arr.shape[1] != width:
        raise PathFileError(f"{where}: rows have {arr.shape[1]} values but {width} joint names are given")
    return arr


def _names(value: Any, where: str) -> Optional[List[str]]:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(n, str) for n in value):
        raise PathFileError(f"{where}: joint_names must be a list of strings")
    return list(value)


def _trajectory(doc: Any) -> Optional[dict]:
    """The JointTrajectory-shaped mapping inside ``doc`` (itself, or its ``joint_trajectory``), or None."""
    if isinstance(doc, dict) and isinstance(doc.get("joint_trajectory"), dict):
        doc = doc["joint_trajectory"]
    return doc if isinstance(doc, dict) and "points" in doc else None


def _trajectory_spec(doc: dict, where: str, top_names: Optional[List[str]]) -> PathSpec:
    """A JointTrajectory-shaped path: joint_names plus points[i].positions."""
    points = doc["points"]
    if not isinstance(points, list) or not points:
        raise PathFileError(f"{where}: 'points' must be a non-empty list of trajectory points")
    rows = []
    for i, point in enumerate(points):
        if not isinstance(point, dict) or "positions" not in point:
            raise PathFileError(f"{where}: trajectory point {i} has no 'positions'")
        rows.append(point["positions"])
    names = _names(doc.get("joint_names"), where) or top_names
    return PathSpec(where, _matrix(rows, where, len(names) if names else None), names)


def _read_json(path: Path, key: str) -> List[PathSpec]:
    try:
        doc = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise PathFileError(f"{path}: not valid JSON ({e})") from None
    if isinstance(doc, list):
        return [PathSpec(str(path), _matrix(doc, str(path)), None)]
    if not isinstance(doc, dict):
        raise PathFileError(f"{path}: expected an object with 'waypoints' or 'paths', or a list of waypoints")
    top_names = _names(doc.get("joint_names"), str(path))
    if "paths" in doc:
        paths = doc["paths"]
        if not isinstance(paths, list) or not paths:
            raise PathFileError(f"{path}: 'paths' must be a non-empty list")
        out = []
        for i, p in enumerate(paths):
            where = f"{path}#{i}"
            if isinstance(p, list):
                out.append(PathSpec(where, _matrix(p, where, len(top_names) if top_names else None), top_names))
                continue
            if _trajectory(p) is not None:
                out.append(_trajectory_spec(_trajectory(p), where, top_names))
                continue
            if not isinstance(p, dict) or "waypoints" not in p:
                raise PathFileError(f"{where}: each path needs 'waypoints'")
            names = _names(p.get("joint_names"), where) or top_names
            out.append(PathSpec(where, _matrix(p["waypoints"], where, len(names) if names else None), names))
        return out
    if _trajectory(doc) is not None:
        return [_trajectory_spec(_trajectory(doc), str(path), top_names)]
    for k in (key, "waypoints", "states"):
        if k in doc:
            return [PathSpec(str(path), _matrix(doc[k], str(path), len(top_names) if top_names else None), top_names)]
    raise PathFileError(f"{path}: expected a '{key}', 'paths' or 'points' (JointTrajectory) key")


def _is_number(token: str) -> bool:
    try:
        float(token)
        return True
    except ValueError:
        return False


def _read_csv(path: Path) -> List[PathSpec]:
    rows: List[List[str]] = []
    with path.open(newline="") as f:
        for row in csv.reader(f):
            cells = [c.strip() for c in row]
            if not cells or all(not c for c in cells) or cells[0].startswith("#"):
                continue
            rows.append(cells)
    if not rows:
        raise PathFileError(f"{path}: no rows")
    names: Optional[List[str]] = None
    if not all(_is_number(c) for c in rows[0]):
        names, rows = rows[0], rows[1:]
        if any(not n for n in names):
            raise PathFileError(f"{path}: empty joint name in the header row")
    for i, r in enumerate(rows):
        bad = [c for c in r if not _is_number(c)]
        if bad:
            raise PathFileError(f"{path}: row {i + 1 + (names is not None)} has a non-number {bad[0]!r}")
    if not rows:
        raise PathFileError(f"{path}: a header but no waypoints")
    widths = {len(r) for r in rows}
    if len(widths) != 1:
        raise PathFileError(f"{path}: rows have different lengths {sorted(widths)}")
    return [PathSpec(str(path), _matrix([[float(c) for c in r] for r in rows], str(path),
                                        len(names) if names else None), names)]


def _read_npy(path: Path) -> List[PathSpec]:
    try:
        arr = np.load(path, allow_pickle=False)
    except (ValueError, OSError) as e:
        raise PathFileError(f"{path}: not a readable .npy array ({e})") from None
    if arr.dtype.kind not in "fiu":
        raise PathFileError(f"{path}: expected a numeric array, got dtype {arr.dtype}")
    if arr.ndim == 2:
        return [PathSpec(str(path), _matrix(arr, str(path)), None)]
    if arr.ndim == 3:
        return [PathSpec(f"{path}#{i}", _matrix(a, f"{path}#{i}"), None) for i, a in enumerate(arr)]
    raise PathFileError(f"{path}: expected shape (n, dof) or (k, n, dof), got {arr.shape}")


def read_paths(file: "str | Path") -> List[PathSpec]:
    """Every path in ``file`` (by extension: .json, .csv, .npy)."""
    path = Path(file)
    if not path.is_file():
        raise PathFileError(f"{path}: no such file")
    ext = path.suffix.lower()
    if ext == ".json":
        return _read_json(path, "waypoints")
    if ext == ".csv":
        return _read_csv(path)
    if ext == ".npy":
        return _read_npy(path)
    raise PathFileError(f"{path}: unknown file type {ext!r} (expected .json, .csv or .npy)")


def read_states(file: "str | Path") -> PathSpec:
    """Configurations (n, dof) from ``file``: the same formats, with key ``states`` in JSON."""
    path = Path(file)
    if path.suffix.lower() == ".json" and path.is_file():
        specs = _read_json(path, "states")
    else:
        specs = read_paths(path)
    if len(specs) != 1:
        raise PathFileError(f"{path}: expected one array of configurations, found {len(specs)}")
    return specs[0]


def finite_or_none(x: float) -> Optional[float]:
    """JSON has no infinities: None for them."""
    return x if math.isfinite(x) else None


__all__ = ["PathFileError", "PathSpec", "read_paths", "read_states"]


def write_path(file: "str | Path", joint_names: List[str], waypoints: np.ndarray,
               time_from_start: Optional[np.ndarray] = None) -> None:
    """Writes a path in the form :func:`read_paths` reads, by extension: ``.json`` ({joint_names, waypoints,
    time_from_start}), ``.csv`` (a header of joint names, one row per waypoint, values written with
    ``repr`` so that they read back exactly) or ``.npy`` (shape (n, dof), the scene's joint order)."""
    path = Path(file)
    ext = path.suffix.lower()
    rows = np.asarray(waypoints, dtype=np.float64)
    if ext == ".json":
        doc: dict = {"joint_names": list(joint_names), "waypoints": rows.tolist()}
        if time_from_start is not None and len(time_from_start):
            doc["time_from_start"] = np.asarray(time_from_start, dtype=np.float64).tolist()
        path.write_text(json.dumps(doc) + "\n")
    elif ext == ".csv":
        with path.open("w", newline="") as f:
            w = csv.writer(f)
            w.writerow(joint_names)
            for r in rows:
                w.writerow([repr(float(v)) for v in r])
    elif ext == ".npy":
        np.save(path, rows)
    else:
        raise PathFileError(f"{path}: unknown file type {ext!r} (write .json, .csv or .npy)")
