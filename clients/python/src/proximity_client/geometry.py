"""Small constructors for the wire geometry: poses, shapes, object parts, world and attached objects.

Every function returns a protobuf message of ``proximity.v1`` so it can go straight into
:meth:`proximity_client.Client.create_scene` or :meth:`~proximity_client.Client.update_world`.
Lengths are metres, angles radians, quaternions (x, y, z, w).
"""
from __future__ import annotations

import math
from typing import Iterable, Optional, Sequence, Union

import numpy as np

from ._stubs import pb

PoseLike = Union["pb.Pose", Sequence[float], None]


def quaternion_from_rpy(roll: float, pitch: float, yaw: float) -> "tuple[float, float, float, float]":
    """The unit quaternion (x, y, z, w) of R = Rz(yaw) Ry(pitch) Rx(roll)."""
    cr, sr = math.cos(roll / 2), math.sin(roll / 2)
    cp, sp = math.cos(pitch / 2), math.sin(pitch / 2)
    cy, sy = math.cos(yaw / 2), math.sin(yaw / 2)
    return (sr * cp * cy - cr * sp * sy,
            cr * sp * cy + sr * cp * sy,
            cr * cp * sy - sr * sp * cy,
            cr * cp * cy + sr * sp * sy)


def pose(position: Sequence[float] = (0.0, 0.0, 0.0), quaternion: Optional[Sequence[float]] = None,
         rpy: Optional[Sequence[float]] = None) -> "pb.Pose":
    """A Pose from a position and either a quaternion (x, y, z, w) or roll-pitch-yaw (radians).

    Without either, the orientation is the identity.
    """
    if quaternion is not None and rpy is not None:
        raise ValueError("give quaternion or rpy, not both")
    if rpy is not None:
        quaternion = quaternion_from_rpy(*rpy)
    if quaternion is None:
        quaternion = (0.0, 0.0, 0.0, 1.0)
    px, py, pz = (float(v) for v in position)
    qx, qy, qz, qw = (float(v) for v in quaternion)
    return pb.Pose(position=pb.Vector3(x=px, y=py, z=pz), orientation=pb.Quaternion(x=qx, y=qy, z=qz, w=qw))


def as_pose(value: PoseLike) -> "pb.Pose":
    """Accepts a Pose, None (identity), (x, y, z), or (x, y, z, qx, qy, qz, qw)."""
    if value is None:
        return pose()
    if isinstance(value, pb.Pose):
        return value
    v = [float(x) for x in value]
    if len(v) == 3:
        return pose(v)
    if len(v) == 7:
        return pose(v[:3], v[3:])
    raise ValueError(f"a pose is (x, y, z) or (x, y, z, qx, qy, qz, qw), got {len(v)} values")


REGIONS = {"sphere": 0, "box": 1, "cylinder": 2}


def pose_goal(link: str, pose: PoseLike, *, point_offset: Optional[Sequence[float]] = None, region: str = "sphere",
              region_size: Optional[Union[float, Sequence[float]]] = None,
              orientation_tolerance: Optional[Union[float, Sequence[float]]] = None,
              position_only: bool = False) -> "pb.PoseGoal":
    """Where link ``link`` must be (MoveIt's position and orientation constraints on one link): ``pose`` in the
    world, (x, y, z) or (x, y, z, qx, qy, qz, qw) or a Pose. ``point_offset``: the point of the link (link frame,
    m) that must reach the position (default its origin). ``region``: ``"sphere"`` (``region_size`` a radius;
    default 1e-4 m), ``"box"`` (half-extents x, y, z along the target's axes) or ``"cylinder"`` (radius and
    half-length along the target's z). ``orientation_tolerance``: rad per axis of the rotation vector (a number
    for all three; default 1e-3). ``position_only``: the orientation is free."""
    if region not in REGIONS:
        raise ValueError(f"region must be one of {', '.join(REGIONS)}, got {region!r}")
    g = pb.PoseGoal(link=str(link), pose=as_pose(pose), region=REGIONS[region], position_only=bool(position_only))
    if point_offset is not None:
        x, y, z = (float(v) for v in point_offset)
        g.point_offset.CopyFrom(pb.Vector3(x=x, y=y, z=z))
    if region_size is not None:
        if isinstance(region_size, (int, float)):
            size = (float(region_size), 0.0, float(region_size)) if region == "cylinder" else (float(region_size),) * 3
        else:
            size = tuple(float(v) for v in region_size)
            if region == "cylinder" and len(size) == 2:
                size = (size[0], 0.0, size[1])
        if len(size) != 3:
            raise ValueError("region_size is a number or three values (cylinder: radius, half-length)")
        g.region_size.CopyFrom(pb.Vector3(x=size[0], y=size[1], z=size[2]))
    if orientation_tolerance is not None:
        t = ((float(orientation_tolerance),) * 3 if isinstance(orientation_tolerance, (int, float))
             else tuple(float(v) for v in orientation_tolerance))
        if len(t) != 3:
            raise ValueError("orientation_tolerance is a number or three values (x, y, z)")
        g.orientation_tolerance.CopyFrom(pb.Vector3(x=t[0], y=t[1], z=t[2]))
    return g


def _part(shape: "pb.Shape", at: PoseLike) -> "pb.ObjectPart":
    return pb.ObjectPart(shape=shape, pose=as_pose(at))


def box(size: Sequence[float], at: PoseLike = None) -> "pb.ObjectPart":
    """A solid box with full side lengths ``size`` (x, y, z), centred on its frame, posed ``at``."""
    sx, sy, sz = (float(v) for v in size)
    return _part(pb.Shape(box=pb.Box(size=pb.Vector3(x=sx, y=sy, z=sz))), at)


def sphere(radius: float, at: PoseLike = None) -> "pb.ObjectPart":
    """A solid sphere of ``radius`` centred at ``at``."""
    return _part(pb.Shape(sphere=pb.Sphere(radius=float(radius))), at)


def cylinder(radius: float, length: float, at: PoseLike = None) -> "pb.ObjectPart":
    """A solid cylinder, axis along z, centred on its frame; ``length`` is the full length."""
    return _part(pb.Shape(cylinder=pb.Cylinder(radius=float(radius), length=float(length))), at)


def capsule(radius: float, length: float, at: PoseLike = None) -> "pb.ObjectPart":
    """A capsule, axis along z: a cylinder of ``length`` with hemispherical caps of ``radius``."""
    return _part(pb.Shape(capsule=pb.Capsule(radius=float(radius), length=float(length))), at)


def cone(radius: float, length: float, at: PoseLike = None) -> "pb.ObjectPart":
    """A cone centred at mid-height, axis along z, apex towards +z."""
    return _part(pb.Shape(cone=pb.Cone(radius=float(radius), length=float(length))), at)


def convex_hull(points: "np.ndarray | Sequence[Sequence[float]]", at: PoseLike = None) -> "pb.ObjectPart":
    """The convex hull of ``points`` ((n, 3), n >= 4, not coplanar)."""
    p = np.asarray(points, dtype=np.float64)
    if p.ndim != 2 or p.shape[1] != 3:
        raise ValueError(f"convex hull points must have shape (n, 3), got {p.shape}")
    return _part(pb.Shape(convex_hull=pb.ConvexHull(points=p.ravel().tolist())), at)


def mesh(vertices: "np.ndarray | Sequence[Sequence[float]]", triangles: "np.ndarray | Sequence[Sequence[int]]",
         at: PoseLike = None) -> "pb.ObjectPart":
    """An inline triangle mesh (a surface): vertices (n, 3) in metres, triangles (m, 3) vertex indices."""
    v = np.asarray(vertices, dtype=np.float64)
    t = np.asarray(triangles)
    if v.ndim != 2 or v.shape[1] != 3:
        raise ValueError(f"mesh vertices must have shape (n, 3), got {v.shape}")
    if t.ndim != 2 or t.shape[1] != 3:
        raise ValueError(f"mesh triangles must have shape (m, 3), got {t.shape}")
    if t.size and (t.min() < 0 or t.max() >= len(v)):
        raise ValueError("mesh triangle indices must lie in [0, number of vertices)")
    shape = pb.Shape(mesh=pb.Mesh(vertices=v.ravel().tolist(), triangles=t.astype(np.uint32).ravel().tolist()))
    return _part(shape, at)


def mesh_file(path: str, scale: Sequence[float] = (1.0, 1.0, 1.0), at: PoseLike = None) -> "pb.ObjectPart":
    """A mesh file on the server (STL, OBJ, PLY, COLLADA), scaled per axis."""
    sx, sy, sz = (float(v) for v in scale)
    return _part(pb.Shape(mesh_file=pb.MeshFile(path=str(path), scale=pb.Vector3(x=sx, y=sy, z=sz))), at)


def point_cloud_part(points: "np.ndarray | Sequence[Sequence[float]]", radius: float, frame: str = "",
                     state: Optional[Sequence[float]] = None, voxel_size: Optional[float] = None,
                     self_filter_padding: Optional[float] = None, at: PoseLike = None) -> "pb.ObjectPart":
    """Sensed points ((n, 3), metres) as balls of ``radius``: sent packed as float32.

    ``frame``: "" for the part's frame (the object frame by ``at``), or a robot link whose frame the
    points are in at ``state`` (joint values in the scene's order). ``voxel_size``: the server's filter
    (None: ``radius``; 0: keep every point). ``self_filter_padding`` (with ``state``): points within it of
    the robot's links at ``state`` are dropped."""
    p = np.asarray(points, dtype=np.float32)
    if p.ndim != 2 or p.shape[1] != 3:
        raise ValueError(f"point cloud points must have shape (n, 3), got {p.shape}")
    cloud = pb.PointCloud(points=np.ascontiguousarray(p).astype("<f4").tobytes(), radius=float(radius),
                          frame=str(frame))
    if voxel_size is not None:
        cloud.voxel_size = float(voxel_size)
    if state is not None:
        cloud.state.extend(float(v) for v in state)
    if self_filter_padding is not None:
        cloud.self_filter_padding = float(self_filter_padding)
    return _part(pb.Shape(point_cloud=cloud), at)


def point_cloud(id: str, points: "np.ndarray | Sequence[Sequence[float]]", frame: str = "", radius: float = 0.0,
                **options) -> "pb.CollisionObject":
    """A world object ``id`` holding one point cloud (see :func:`point_cloud_part` for ``options``:
    state, voxel_size, self_filter_padding, at), for ``update_world(add=...)`` or ``replace=...``."""
    at = options.pop("at", None)
    return pb.CollisionObject(id=id, pose=as_pose(at), parts=[point_cloud_part(points, radius, frame, **options)])


def collision_object(id: str, parts: Iterable["pb.ObjectPart"], at: PoseLike = None) -> "pb.CollisionObject":
    """A world object ``id`` made of ``parts`` (posed in the object frame), the object frame at ``at``."""
    return pb.CollisionObject(id=id, pose=as_pose(at), parts=list(parts))


def attached_object(id: str, link: str, parts: Iterable["pb.ObjectPart"],
                    touch_links: Iterable[str] = ()) -> "pb.AttachedObject":
    """An object carried by ``link`` (parts posed in the link frame) that may touch ``touch_links``."""
    return pb.AttachedObject(id=id, link=link, parts=list(parts), touch_links=list(touch_links))


__all__ = ["pose", "as_pose", "quaternion_from_rpy", "box", "sphere", "cylinder", "capsule", "cone",
           "convex_hull", "mesh", "mesh_file", "point_cloud_part", "point_cloud", "collision_object",
           "attached_object"]
