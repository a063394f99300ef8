"""The bridge without ROS: one proximityd scene mirrored from ROS-shaped messages, and MoveIt-shaped
answers computed with the Python client (:class:`proximity_client.Client`).

:class:`BridgeCore` takes and returns plain data shaped like ROS 2 messages (see
:mod:`proximity_ros.convert`), so the ROS 1 node (:mod:`proximity_ros.node`) and an rclpy node both
wrap it. It is thread-safe: services, topics and the parameter watcher may call it at once.

The scene: a robot (URDF + SRDF + meshes uploaded by the client, or proximityd's built-in scene), the
world objects, attached objects and allowed pairs received as messages. It is created once and its id
kept; collision objects become UpdateWorld calls (a new scene version each); attached objects and
allowed pairs, which UpdateWorld does not carry, re-create the scene from the bridge's mirror of it
(content-addressed: the same content gives the same id). A changed robot description re-creates it
too, keeping the world objects.
"""
from __future__ import annotations

import hashlib
import math
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Set, Tuple

import numpy as np

from proximity_client import Client, ProximityError, geometry
from proximity_client._stubs import pb
from proximity_client.results import SceneInfo, TrackResult

from . import convert
from .convert import BadRequest, JointSpace, get
from .robot import RobotDescription, RobotDescriptionError, content_key, describe

#: The robot of proximityd's built-in scene (server/default_scene.cc): Debian's dart-doc KR5.
DEFAULT_URDF = "/usr/share/doc/dart/data/urdf/KR5/KR5 sixx R650.urdf"
#: The built-in scene puts the KR5's base_link at the world origin, so its world frame is named so.
DEFAULT_PLANNING_FRAME = "base_link"


class Refused(RuntimeError):
    """A message or request the bridge cannot apply (the scene is left as it was)."""


@dataclass
class RobotInput:
    """A robot given to the bridge: URDF and SRDF text and the mesh files the URDF names."""

    urdf: str
    srdf: str = ""
    files: Dict[str, bytes] = field(default_factory=dict)
    origin: str = ""  #: where it came from, for messages ("parameter /robot_description")

    @property
    def key(self) -> str:
        digests = [f"{k}={hashlib.sha256(self.files[k]).hexdigest()}" for k in sorted(self.files)]
        return content_key(self.urdf, self.srdf, *digests)


@dataclass
class _Scene:
    """An immutable snapshot of what queries need."""

    scene_id: str
    info: SceneInfo
    space: JointSpace
    desc: Optional[RobotDescription]
    planning_frame: str


def _stamp_now() -> Dict[str, int]:
    t = time.time()
    return {"sec": int(t), "nanosec": int((t % 1) * 1e9)}


class BridgeCore:
    """proximityd behind MoveIt-shaped calls.

    Args:
        client: a connected :class:`proximity_client.Client`.
        planning_frame: the frame objects are given in; default: the SRDF virtual joint's parent frame,
            else the URDF's root link, or ``base_link`` for the built-in scene.
        default_urdf: the built-in scene's URDF, read for joint velocity limits.
        clearance_rel_err: relative error budget of clearance intervals (0.05: upper <= 1.05 lower).
        clearance_horizon: metres (> 0, at most 1e4): :meth:`clearance` reports the pairs within it.
        clearance_max_pairs: how many (1 to 4096) of them, nearest first, overall or per robot link
            with ``clearance_per_link``.
        default_velocity: rad/s (m/s) for joints whose URDF gives no velocity limit.
        tf_lookup: ``tf_lookup(frame, planning_frame)``: the pose (x, y, z, qx, qy, qz, qw) of a TF frame in
            the planning frame, or None when TF does not know it (the node's tf2 buffer); objects may then be
            given in any TF frame.
        joint_limits: MoveIt's joint_limits (``{joint: {max_velocity, max_acceleration, has_...}}``, the
            ``robot_description_planning/joint_limits`` parameter or a joint_limits.yaml); with
            ``default_acceleration`` (rad/s^2, m/s^2; 0: none) for joints it gives none. When every joint a
            plan moves has an acceleration limit, ``~plan`` times its trajectory time-optimally (proximityd's
            Plan timing) with velocities and accelerations.
        path_tolerance: rad (m), >= 0: with time-optimal timing, corners passed without stopping on blends
            within this joint-space distance of them, each certified as the path is (MoveIt's TOTG
            path_tolerance, whose default is 0.1); 0 (default): the certified path followed exactly.
        log: ``log(level, text)`` for refusals and notes ("info", "warn", "error").
    """

    def __init__(self, client: Client, *, planning_frame: Optional[str] = None, default_urdf: str = DEFAULT_URDF,
                 clearance_rel_err: float = 0.05, clearance_horizon: float = 0.25, clearance_max_pairs: int = 8,
                 clearance_per_link: bool = False, default_velocity: float = 1.0,
                 joint_limits: Optional[Mapping[str, Any]] = None, default_acceleration: float = 0.0,
                 path_tolerance: float = 0.0,
                 tf_lookup: Optional[Callable[[str, str], Optional[Sequence[float]]]] = None,
                 log: Optional[Callable[[str, str], None]] = None) -> None:
        self.client = client
        self._frame_override = planning_frame or None
        self._default_urdf = default_urdf
        self.clearance_rel_err = float(clearance_rel_err)
        if not math.isfinite(self.clearance_rel_err) or self.clearance_rel_err < 0:
            raise ValueError(f"clearance_rel_err must be finite and >= 0, got {clearance_rel_err!r}")
        self.clearance_horizon = float(clearance_horizon)
        if not math.isfinite(self.clearance_horizon) or not 0 < self.clearance_horizon <= 1e4:
            raise ValueError(f"clearance_horizon must be in (0, 10000] metres, got {clearance_horizon!r}")
        if isinstance(clearance_max_pairs, bool) or int(clearance_max_pairs) != clearance_max_pairs or \
                not 1 <= int(clearance_max_pairs) <= 4096:
            raise ValueError(f"clearance_max_pairs must be an integer in [1, 4096], got {clearance_max_pairs!r}")
        self.clearance_max_pairs = int(clearance_max_pairs)
        if not isinstance(clearance_per_link, bool):
            raise ValueError(f"clearance_per_link must be true or false, got {clearance_per_link!r}")
        self.clearance_per_link = clearance_per_link
        self._track_lock = threading.Lock()       # the clearance's track session, one query at a time
        self._track_scene: Optional[str] = None   # the scene whose track session the client keeps
        self.default_velocity = float(default_velocity)
        self.default_acceleration = float(default_acceleration or 0.0)
        if not math.isfinite(self.default_acceleration) or self.default_acceleration < 0:
            raise ValueError(f"default_acceleration must be finite and >= 0, got {default_acceleration!r}")
        self.path_tolerance = float(path_tolerance or 0.0)
        if not math.isfinite(self.path_tolerance) or self.path_tolerance < 0:
            raise ValueError(f"path_tolerance must be finite and >= 0, got {path_tolerance!r}")
        self.joint_limits = convert.moveit_joint_limits(joint_limits or {})
        self._tf_lookup = tf_lookup
        self._log = log or (lambda level, text: None)
        self._lock = threading.RLock()           # scene changes, one at a time
        self._state_lock = threading.Lock()      # the current joint state
        self._robot: Optional[RobotInput] = None  # None: the built-in scene
        self._robot_error: Optional[str] = None   # why the given robot cannot be used
        self._scene: Optional[_Scene] = None
        self._objects: "OrderedDict[str, pb.CollisionObject]" = OrderedDict()  # world objects we added
        self._attached: "OrderedDict[str, pb.AttachedObject]" = OrderedDict()
        self._allowed: List[Tuple[str, str]] = []
        self._current: Dict[str, float] = {}
        self._warned_velocity: Set[str] = set()
        self._warned_ignored: Set[str] = set()
        self.updates_applied = 0
        self.updates_refused = 0
        self.last_error = ""
        self.dropped_states = 0

    # ---- the robot and the scene -----------------------------------------------------------------

    def set_robot(self, robot: Optional[RobotInput]) -> None:
        """Uses ``robot`` (None: proximityd's built-in scene) from now on. Its description is read at
        once (RobotDescriptionError when it cannot be); the scene is created now, or at the next call
        when proximityd cannot be reached."""
        with self._lock:
            if robot is not None:
                try:
                    desc = describe(robot.urdf, robot.srdf)
                except RobotDescriptionError as e:
                    self._robot_error = f"{robot.origin or 'the robot description'}: {e}"
                    raise
                for k, a in list(self._attached.items()):
                    if a.link not in desc.links:
                        del self._attached[k]
                        self._log("warn", f"attached object {k!r} dropped: the new robot has no link {a.link!r}")
            self._robot = robot
            self._robot_error = None
            self._scene = None
            if robot is None:  # the built-in scene has its own workcell and takes no bridge objects
                self._objects.clear()
                self._attached.clear()
                self._allowed = []
            try:
                self._ensure_scene()
            except (ProximityError, Refused) as e:
                self._log("warn", f"scene not created yet: {e}")

    def set_robot_error(self, text: str) -> None:
        """Marks the robot as missing (a parameter that is not set): queries fail with ``text``."""
        with self._lock:
            self._robot_error = text
            self._scene = None

    @property
    def robot_key(self) -> Optional[str]:
        with self._lock:
            return None if self._robot is None else self._robot.key

    def _describe(self) -> Tuple[Optional[RobotDescription], str]:
        if self._robot is not None:
            desc = describe(self._robot.urdf, self._robot.srdf)
            return desc, self._frame_override or desc.planning_frame
        desc = None
        if self._default_urdf and Path(self._default_urdf).is_file():
            try:
                desc = describe(Path(self._default_urdf).read_text())
            except (RobotDescriptionError, OSError) as e:
                self._log("warn", f"{self._default_urdf}: {e}; velocity limits default to {self.default_velocity}")
        return desc, self._frame_override or DEFAULT_PLANNING_FRAME

    def _create_request(self) -> Dict[str, Any]:
        assert self._robot is not None
        return dict(urdf=self._robot.urdf, srdf=self._robot.srdf or None, files=self._robot.files,
                    objects=list(self._objects.values()), attached=list(self._attached.values()),
                    allowed_pairs=list(self._allowed))

    def _ensure_scene(self) -> _Scene:
        """The current scene, created when there is none yet."""
        with self._lock:
            if self._robot_error:
                raise Refused(self._robot_error)
            if self._scene is not None:
                return self._scene
            desc, frame = self._describe()
            if self._robot is None:
                info = self.client.get_scene("default")
            else:
                info = self.client.create_scene(**self._create_request())
                for w in info.warnings:
                    self._log("warn", f"proximityd: {w}")
            self._install(info, desc, frame)
            self._log("info", f"scene {info.scene_id} ({info.robot_name}, {info.dof} joints, "
                              f"{len(info.object_ids)} objects)")
            assert self._scene is not None
            return self._scene

    def _install(self, info: SceneInfo, desc: Optional[RobotDescription], frame: str) -> None:
        others = set(desc.joints) if desc is not None else set()
        self._scene = _Scene(info.scene_id, info, JointSpace(info.joint_names, others, self._warn_ignored), desc, frame)

    def _warn_ignored(self, names: List[str], where: str) -> None:
        """One warning per joint a robot state names that the robot lacks (ignored, as MoveIt does)."""
        new = [n for n in names if n not in self._warned_ignored]
        if new:
            self._warned_ignored.update(new)
            self._log("warn", f"{where} names joint{'s' if len(new) > 1 else ''} {', '.join(map(repr, new))}, which "
                              "the robot lacks: ignored, as MoveIt does (said once per joint)")

    def _recreate(self) -> None:
        """Re-creates the scene from the mirror (robot, objects, attached objects, allowed pairs)."""
        if self._robot is None:
            raise Refused("proximityd's built-in scene cannot carry attached objects or allowed pairs from the "
                          "bridge (its workcell is the server's); give the bridge a robot (robot_description) for that")
        info = self.client.create_scene(**self._create_request())
        old = self._ensure_scene()
        self._install(info, old.desc, old.planning_frame)

    def scene(self) -> _Scene:
        """The scene queries run on (created on first use). A snapshot read without the scene lock, so
        queries never wait behind a scene change in progress (a point cloud's update)."""
        s = self._scene
        if s is not None and not self._robot_error:
            return s
        return self._ensure_scene()

    def status(self) -> Dict[str, Any]:
        """A proximity_msgs/SceneStatus-shaped dict."""
        with self._lock:
            s = self._scene
            return {"scene_id": s.scene_id if s else "", "version": s.info.version if s else 0,
                    "robot_name": s.info.robot_name if s else "", "planning_frame": s.planning_frame if s else "",
                    "joint_names": list(s.info.joint_names) if s else [],
                    "group_names": sorted(s.desc.groups) if s and s.desc else [],
                    "object_ids": list(s.info.object_ids) if s else [],
                    "attached_object_ids": list(s.info.attached_object_ids) if s else [],
                    "updates_applied": self.updates_applied, "updates_refused": self.updates_refused,
                    "last_error": self.last_error}

    # ---- the current joint state -----------------------------------------------------------------

    def update_joint_state(self, js: Any) -> List[str]:
        """Merges a /joint_states message into the current state (joints it does not name keep their
        values); returns its names. BadRequest for a malformed message (nothing is merged)."""
        names, positions = convert.joint_state_values(js, "joint_states")
        with self._state_lock:
            self._current.update(zip(names, positions))
        return names

    def current(self) -> Dict[str, float]:
        with self._state_lock:
            return dict(self._current)

    # ---- planning-scene messages -----------------------------------------------------------------

    def _frame_ok(self, frame: str, allowed: Sequence[str], where: str) -> None:
        frame = frame.lstrip("/")
        if frame and frame not in allowed:
            raise Refused(f"{where}: frame {frame!r} is unknown to the bridge; give poses in "
                          f"{' or '.join(repr(a) for a in allowed if a)} (or an empty frame_id)")

    def _refusal(self, what: str, e: Exception) -> None:
        self.updates_refused += 1
        self.last_error = f"{what}: {e}"
        self._log("error", f"refused {self.last_error}")

    def apply_collision_object(self, msg: Any) -> None:
        """Applies a moveit_msgs/CollisionObject-shaped message (ADD, REMOVE, APPEND, MOVE) as world
        updates. A message that cannot be applied is refused (logged, counted; Refused raised) and
        changes nothing."""
        oid = str(get(msg, "id", "") or "")
        try:
            with self._lock:
                self._apply_object(msg, oid)
                self.updates_applied += 1
        except (BadRequest, Refused, ProximityError) as e:
            self._refusal(f"collision object {oid!r}", e)
            raise Refused(str(e)) from None

    def _frame_pose(self, s: _Scene, frame: str, where: str) -> Optional[Tuple[float, ...]]:
        """The pose X_WF of frame ``frame`` in the planning frame: None for a world frame (the planning
        frame, the root link, or empty); a robot link's pose at the current /joint_states (forward
        kinematics on proximityd, the scene's base pose applied), as MoveIt places objects given in a link
        frame; otherwise the TF frame's (``tf_lookup``). Refused naming the frame when none of them knows it."""
        frame = frame.lstrip("/")
        if not frame or frame in self._world_frames(s):
            return None
        if frame in s.info.link_names:
            q = [float(v) for v in s.space.complete([], [], self._fallbacks(), f"{where} in frame {frame!r}")]
            poses = self.client.link_poses(q, scene=s.scene_id)
            return tuple(float(v) for v in poses.poses[0, poses.link_names.index(frame)])
        if self._tf_lookup is not None:
            found = self._tf_lookup(frame, s.planning_frame)
            if found is not None:
                return tuple(float(v) for v in found)
        raise Refused(f"{where}: frame {frame!r} is neither the planning frame "
                      f"({' or '.join(repr(f) for f in self._world_frames(s) if f)}), a robot link, nor a TF frame "
                      f"the bridge can look up")

    def _apply_object(self, msg: Any, oid: str) -> None:
        s = self._ensure_scene()
        header = get(msg, "header") or {}
        X_WF = self._frame_pose(s, str(get(header, "frame_id", "") or ""), "header.frame_id")
        op = int(get(msg, "operation", convert.ADD) or 0)
        existing = set(s.info.object_ids)
        if op == convert.REMOVE:
            ids = [oid] if oid else list(existing)
            if oid and oid not in existing:
                raise Refused(f"REMOVE: no world object {oid!r} (objects: {', '.join(sorted(existing)) or 'none'})")
            if ids:
                self._update(s, remove=ids)
            for i in ids:
                self._objects.pop(i, None)
            return
        if not oid:
            raise BadRequest("id is empty")
        X_WM = convert.pose_values(get(msg, "pose"), "pose")
        if X_WF is not None:
            X_WM = convert.compose(X_WF, X_WM)
        if op == convert.MOVE:
            if oid not in existing:
                raise Refused(f"MOVE: no world object {oid!r}")
            self._update(s, move={oid: X_WM})
            if oid in self._objects:
                self._objects[oid].pose.CopyFrom(pb.Pose(**_pose_kwargs(X_WM)))
            return
        if op not in (convert.ADD, convert.APPEND):
            raise BadRequest(f"operation {op} is not ADD (0), REMOVE (1), APPEND (2) or MOVE (3)")
        parts = convert.object_parts(msg, "collision_object")
        if not parts:
            raise BadRequest(f"{'ADD' if op == convert.ADD else 'APPEND'} of {oid!r} has no primitives or meshes")
        if op == convert.APPEND and oid in existing:
            old = self._objects.get(oid)
            if old is None:
                raise Refused(f"APPEND: the shapes of {oid!r} (part of proximityd's built-in scene) are not known "
                              "to the bridge; REMOVE and ADD it instead")
            X_WO = convert.wire_pose_values(old.pose)
            X_OM = convert.compose(convert.inverse(X_WO), X_WM)
            obj = pb.CollisionObject(id=oid, pose=old.pose, parts=list(old.parts) +
                                     [convert.part_in_frame(p, X_OM) for p in parts])
        else:
            obj = pb.CollisionObject(id=oid, pose=pb.Pose(**_pose_kwargs(X_WM)), parts=parts)
        if oid in s.info.link_names:
            raise Refused(f"id {oid!r} is a robot link's name")
        if oid in s.info.attached_object_ids:
            raise Refused(f"id {oid!r} is an attached object; detach it first")
        if oid in existing:
            self._update(s, remove=[oid])
            s = self._ensure_scene()
        self._update(s, add=[obj])
        self._objects[oid] = obj

    def _update(self, s: _Scene, **kwargs: Any) -> None:
        """One UpdateWorld on ``s``; its result becomes the current scene."""
        info = self.client.update_world(scene=s.scene_id, **kwargs)
        self._install(info, s.desc, s.planning_frame)

    def _world_frames(self, s: _Scene) -> List[str]:
        frames = [s.planning_frame]
        if s.desc is not None and self._robot is not None:
            frames.append(s.desc.root_link)  # the scene puts the root link at the planning frame's origin
        return frames

    def apply_point_cloud(self, msg: Any, object_id: str = "sensed", radius: float = 0.01,
                          voxel_size: Optional[float] = None,
                          self_filter_padding: Optional[float] = None) -> Dict[str, int]:
        """Makes world object ``object_id`` the points of a sensor_msgs/PointCloud2-shaped message (an
        UpdateWorld REPLACE: the previous cloud goes): x, y, z read by their offsets and datatypes, NaN
        points dropped. ``header.frame_id`` empty or a world frame (the planning frame, the root link)
        puts the points in the world; another robot link puts them in that link's frame at the current
        /joint_states (sent as the cloud's state, posed by proximityd); a TF frame (a camera's) moves them
        into the planning frame through TF. ``self_filter_padding`` drops
        points within it of the robot at the current /joint_states. A cloud with no points left removes
        the object. Returns ``{"points", "nan_dropped"}``; a message that cannot be applied is refused
        (logged, counted; Refused raised) and changes nothing."""
        try:
            points, nan = convert.point_cloud2_points(msg, "point_cloud")
            frame = str(get(get(msg, "header") or {}, "frame_id", "") or "").lstrip("/")
            with self._lock:
                s = self._ensure_scene()
                if object_id in s.info.link_names or object_id in s.info.attached_object_ids:
                    raise Refused(f"id {object_id!r} is a robot link's or an attached object's name")
                world = not frame or frame in self._world_frames(s)
                if not world and frame not in s.info.link_names:
                    # A TF frame (a camera's): the points move into the planning frame through TF.
                    X = self._frame_pose(s, frame, "header.frame_id")
                    assert X is not None
                    points = convert.transform_points(X, points)
                    world, frame = True, ""
                state = None
                if not world or self_filter_padding is not None:
                    why = f"point cloud in frame {frame!r}" if not world else "point cloud self filter"
                    state = [float(v) for v in s.space.complete([], [], self._fallbacks(), why)]
                if not len(points):
                    if object_id in s.info.object_ids:
                        self._update(s, remove=[object_id])
                    self._objects.pop(object_id, None)
                else:
                    obj = geometry.point_cloud(object_id, points, frame="" if world else frame, radius=radius,
                                               state=state, voxel_size=voxel_size,
                                               self_filter_padding=self_filter_padding)
                    self._update(s, replace=[obj])
                    self._objects[object_id] = obj
                self.updates_applied += 1
            return {"points": int(len(points)), "nan_dropped": nan}
        except (BadRequest, Refused, ProximityError) as e:
            self._refusal(f"point cloud {object_id!r}", e)
            raise Refused(str(e)) from None

    def apply_attached_object(self, msg: Any) -> None:
        """Applies a moveit_msgs/AttachedCollisionObject-shaped message: object.operation ADD attaches
        its shapes (posed in link_name's frame) to that link, REMOVE detaches. Re-creates the scene."""
        obj = get(msg, "object") or {}
        oid = str(get(obj, "id", "") or "")
        try:
            with self._lock:
                self._apply_attached(msg, obj, oid)
                self.updates_applied += 1
        except (BadRequest, Refused, ProximityError) as e:
            self._refusal(f"attached object {oid!r}", e)
            raise Refused(str(e)) from None

    def _apply_attached(self, msg: Any, obj: Any, oid: str) -> None:
        s = self._ensure_scene()
        link = str(get(msg, "link_name", "") or "")
        op = int(get(obj, "operation", convert.ADD) or 0)
        saved = (OrderedDict(self._attached), OrderedDict(self._objects))
        if op == convert.REMOVE:
            if oid and oid not in self._attached:
                raise Refused(f"REMOVE: no attached object {oid!r}")
            detached = [self._attached.pop(k) for k in ([oid] if oid else list(self._attached))]
            self._back_to_world(s, detached)
        elif op == convert.ADD:
            if not oid:
                raise BadRequest("object.id is empty")
            if link not in s.info.link_names:
                raise BadRequest(f"link_name {link!r} is not a link of the robot")
            header = get(obj, "header") or {}
            self._frame_ok(str(get(header, "frame_id", "") or ""), [link], "object.header.frame_id")
            X_LM = convert.pose_values(get(obj, "pose"), "object.pose")
            parts = [convert.part_in_frame(p, X_LM) for p in convert.object_parts(obj, "object")]
            if not parts:
                parts = self._world_object_in_link(s, oid, link)
            touch = [str(t) for t in (get(msg, "touch_links") or [])]
            self._attached[oid] = pb.AttachedObject(id=oid, link=link, parts=parts, touch_links=touch)
            self._objects.pop(oid, None)  # MoveIt moves an attached world object out of the world
        else:
            raise BadRequest(f"object.operation {op}: attached objects take ADD (0) or REMOVE (1)")
        try:
            self._recreate()
        except Exception:
            self._attached, self._objects = saved
            raise

    def _link_pose(self, s: _Scene, link: str, why: str) -> Tuple[float, ...]:
        """``link``'s pose in the world at the current joint state (BadRequest naming the joints no
        /joint_states message has given yet)."""
        q = s.space.complete([], [], self._fallbacks(), why)
        return tuple(float(v) for v in self.client.link_poses(q, scene=s.scene_id).pose(link))

    def _world_object_in_link(self, s: _Scene, oid: str, link: str) -> List["pb.ObjectPart"]:
        """The shapes of world object ``oid`` posed in ``link``'s frame where they are now, as MoveIt
        attaches a world object named by id alone: it stays in place and moves with the link from then on."""
        obj = self._objects.get(oid)
        if obj is None:
            if oid in s.info.object_ids:
                raise Refused(f"attaching {oid!r} by id alone: its shapes (part of proximityd's built-in scene) are "
                              "not known to the bridge; give them in the message")
            raise Refused(f"attaching {oid!r} by id alone: there is no world object {oid!r} (give the shapes of a "
                          "new object in the message)")
        X_WL = self._link_pose(s, link, f"attaching {oid!r} by id alone (placed by {link!r}'s pose at the "
                                        "current /joint_states)")
        X_LO = convert.compose(convert.inverse(X_WL), convert.wire_pose_values(obj.pose))
        return [convert.part_in_frame(p, X_LO) for p in obj.parts]

    def _back_to_world(self, s: _Scene, detached: Sequence["pb.AttachedObject"]) -> None:
        """Detached objects go back into the world where their links hold them at the current joint
        state, as MoveIt does; while some joint has no /joint_states value they cannot be placed and are
        dropped, with a warning."""
        for a in detached:
            try:
                X_WL = self._link_pose(s, a.link, f"detaching {a.id!r}")
            except BadRequest as e:
                self._log("warn", f"{e}: {a.id!r} is detached and not put back in the world")
                continue
            self._objects[a.id] = pb.CollisionObject(id=a.id, pose=pb.Pose(**_pose_kwargs(X_WL)), parts=list(a.parts))

    def apply_allowed_collisions(self, msg: Any) -> None:
        """Replaces the allowed pairs with a moveit_msgs/AllowedCollisionMatrix-shaped message's (the
        SRDF's stay). Re-creates the scene."""
        try:
            with self._lock:
                s = self._ensure_scene()
                names = [str(n) for n in (get(msg, "entry_names") or [])]
                rows = list(get(msg, "entry_values") or [])
                if len(rows) != len(names):
                    raise BadRequest(f"{len(names)} entry_names but {len(rows)} entry_values")
                pairs: Set[Tuple[str, str]] = set()
                for i, row in enumerate(rows):
                    enabled = list(get(row, "enabled") or [])
                    if len(enabled) != len(names):
                        raise BadRequest(f"entry_values[{i}].enabled has {len(enabled)} values for {len(names)} names")
                    pairs.update(tuple(sorted((names[i], names[j]))) for j, e in enumerate(enabled) if e and i != j)
                dnames = [str(n) for n in (get(msg, "default_entry_names") or [])]
                dvalues = list(get(msg, "default_entry_values") or [])
                if len(dnames) != len(dvalues):
                    raise BadRequest(f"{len(dnames)} default_entry_names but {len(dvalues)} default_entry_values")
                everything = set(s.info.link_names) | set(s.info.object_ids) | set(s.info.attached_object_ids)
                for n, v in zip(dnames, dvalues):
                    if v:
                        pairs.update(tuple(sorted((n, o))) for o in everything if o != n)
                saved = self._allowed
                self._allowed = sorted(pairs)  # type: ignore[arg-type]
                try:
                    self._recreate()
                except Exception:
                    self._allowed = saved
                    raise
                self.updates_applied += 1
        except (BadRequest, Refused, ProximityError) as e:
            self._refusal("allowed collision matrix", e)
            raise Refused(str(e)) from None

    # ---- queries ---------------------------------------------------------------------------------

    def _fallbacks(self, *first: Mapping[str, float]) -> List[Mapping[str, float]]:
        return [*first, self.current()]

    def _group(self, s: _Scene, group: str) -> List[str]:
        if not group:
            return list(s.space.names)
        if s.desc is None:
            raise BadRequest(f"unknown group_name {group!r}: the robot has no SRDF groups")
        try:
            return s.desc.group_joints(group, s.space.names)
        except RobotDescriptionError as e:
            raise BadRequest(str(e)) from None

    def _contact(self, s: _Scene, pair: Any) -> Dict[str, Any]:
        return convert.contact_information(pair, s.info.attached_object_ids, s.planning_frame, _stamp_now())

    def check_state_validity(self, req: Any) -> Dict[str, Any]:
        """GetStateValidity: ``{"robot_state", "group_name"}`` -> ``{"valid", "contacts", ...}``."""
        s = self.scene()
        self._group(s, str(get(req, "group_name", "") or ""))
        q = s.space.robot_state(get(req, "robot_state") or {}, self._fallbacks())
        r = self.client.check_state(q, scene=s.scene_id)
        valid = bool(r.free and r.within_limits)
        lower = upper = 0.0
        if r.free:
            d = self.client.distance(q, rel_err=self.clearance_rel_err, scene=s.scene_id)
            lower, upper = d.lower, d.upper
        contacts: List[Dict[str, Any]] = []
        if not r.free:
            # Every colliding pair with its point, normal and depth (ComputeContacts, deepest first), as
            # MoveIt's GetStateValidity lists them; the pair CheckState found alone should that list be empty.
            measured = self.client.contacts(q, max_points=1, scene=s.scene_id).contacts
            contacts = [convert.contact_information(c.pair, s.info.attached_object_ids, s.planning_frame, _stamp_now(),
                                                    geometry=c) for c in measured] or [self._contact(s, r.contact)]
        return {"valid": valid, "contacts": contacts,
                "within_limits": bool(r.within_limits), "clearance_lower": float(lower),
                "clearance_upper": float(upper), "scene_id": s.scene_id}

    def check_states(self, req: Any) -> Dict[str, Any]:
        """GetStatesValidity: many robot states, one CheckStates batch."""
        s = self.scene()
        self._group(s, str(get(req, "group_name", "") or ""))
        states = list(get(req, "robot_states") or [])
        fallbacks = self._fallbacks()
        rows = np.empty((len(states), s.space.dof))
        for i, rs in enumerate(states):
            rows[i] = s.space.robot_state(rs, fallbacks, f"robot_states[{i}]")
        if not states:
            return {"valid": [], "within_limits": [], "contacts": [], "contact_state_index": [], "scene_id": s.scene_id}
        r = self.client.check_states(rows, include_contacts=True, scene=s.scene_id)
        valid = np.logical_and(r.free, r.within_limits)
        idx = sorted(r.contacts)
        return {"valid": [bool(v) for v in valid], "within_limits": [bool(v) for v in r.within_limits],
                "contacts": [self._contact(s, r.contacts[i]) for i in idx],
                "contact_state_index": [int(i) for i in idx], "scene_id": s.scene_id}

    def check_trajectory(self, req: Any) -> Dict[str, Any]:
        """CheckTrajectory: certified LINK over every segment of a JointTrajectory, with the first
        invalid segment's time interval and time of first contact."""
        s = self.scene()
        self._group(s, str(get(req, "group_name", "") or ""))
        start = get(req, "start_state") or {}
        names, positions = convert.joint_state_values(get(start, "joint_state") or {}, "start_state.joint_state")
        s.space.ignore_unknown(names, "start_state.joint_state")
        rows, times = convert.trajectory_rows(get(req, "trajectory") or {}, s.space,
                                              self._fallbacks(dict(zip(names, positions))))
        r = self.client.check_path(rows, scene=s.scene_id)
        out: Dict[str, Any] = {"valid": bool(r.free), "first_invalid_segment": -1, "t_free": convert.duration(times[-1]),
                               "t_collide": convert.duration(-1.0), "time_of_first_contact": convert.duration(times[-1]),
                               "segment_t_free": 1.0, "segment_t_collide": -1.0, "undecided": False,
                               "contacts": [], "scene_id": s.scene_id, "message": ""}
        if r.free:
            return out
        seg = max(0, int(r.segment))
        m = r.motion
        t0 = float(times[seg])
        t1 = float(times[min(seg + 1, len(times) - 1)])
        at = lambda frac: t0 + (t1 - t0) * min(max(frac, 0.0), 1.0)  # noqa: E731
        toc = 0.0
        if len(rows) > 1 and m.t_free > 0.0:
            c = self.client.time_of_first_contact(rows[seg], rows[seg + 1], scene=s.scene_id)
            toc = c.t_contact
        out.update({"first_invalid_segment": seg, "t_free": convert.duration(at(m.t_free)),
                    "t_collide": convert.duration(at(m.t_collide)), "time_of_first_contact": convert.duration(at(toc)),
                    "segment_t_free": float(m.t_free), "segment_t_collide": float(m.t_collide),
                    "undecided": bool(m.undecided), "contacts": [self._contact(s, m.contact)] if m.contact else [],
                    "message": f"segment {seg} (points {seg} -> {min(seg + 1, len(rows) - 1)}) collides at "
                               f"t = {at(m.t_collide):.6g} s" + (f": {m.contact}" if m.contact else "")})
        return out

    def velocity_limits(self, s: _Scene, joints: Sequence[str]) -> List[float]:
        out = []
        for j in joints:
            v = s.desc.velocity_limit(j) if s.desc is not None else None
            if v is None:
                if j not in self._warned_velocity:
                    self._warned_velocity.add(j)
                    self._log("warn", f"joint {j} has no URDF velocity limit; timing it at {self.default_velocity}")
                v = self.default_velocity
            out.append(v)
        return out

    def plan(self, req: Any) -> Dict[str, Any]:
        """Plan: a certified path from start_state to goal by proximityd's planner, timed by the URDF's
        velocity limits, and re-checked with the certified path check."""
        s = self.scene()
        group = str(get(req, "group_name", "") or "")
        # A group that moves some of the joints: proximityd plans those, the others held at the start's
        # values (a goal that moves one of them is refused, naming it).
        joints = self._group(s, group)
        planner = convert.planner_name(str(get(req, "planner_id", "") or ""))
        limit = convert.duration_seconds(get(req, "allowed_planning_time", 0.0), "allowed_planning_time")
        if limit < 0:
            raise BadRequest(f"allowed_planning_time must be >= 0, got {limit}")
        scaling = float(get(req, "max_velocity_scaling_factor", 0.0) or 0.0)
        if not math.isfinite(scaling) or scaling < 0 or scaling > 1:
            raise BadRequest(f"max_velocity_scaling_factor must be in (0, 1] (0 means 1), got {scaling}")
        acc_scaling = float(get(req, "max_acceleration_scaling_factor", 0.0) or 0.0)
        if not math.isfinite(acc_scaling) or acc_scaling < 0 or acc_scaling > 1:
            raise BadRequest(f"max_acceleration_scaling_factor must be in (0, 1] (0 means 1), got {acc_scaling}")
        # Time-optimal timing when every joint the plan moves has an acceleration limit.
        timed = self.default_acceleration > 0 or all(
            self.joint_limits.get(j, {}).get("max_acceleration", 0) > 0 for j in joints)
        timing: Dict[str, Any] = {}
        if timed:
            timing = {"joint_limits": {j: l for j, l in self.joint_limits.items() if j in s.space.names},
                      "default_acceleration": self.default_acceleration or None,
                      "velocity_scaling": scaling or None, "acceleration_scaling": acc_scaling or None,
                      "path_tolerance": self.path_tolerance or None}
        start = s.space.robot_state(get(req, "start_state") or {}, self._fallbacks(), "start_state")
        gnames, gpos = convert.joint_state_values(get(req, "goal") or {}, "goal")
        constrained = bool(get(req, "position_constraints") or get(req, "orientation_constraints"))
        goal, goal_pose = None, None
        if constrained:
            if gnames:
                raise BadRequest("give goal (joint positions) or position/orientation constraints, not both")
            goal_pose, frames = convert.pose_goal(get(req, "position_constraints"), get(req, "orientation_constraints"))
            for frame in frames:
                try:
                    self._frame_ok(frame, self._world_frames(s), "constraint header.frame_id")
                except Refused as e:
                    raise BadRequest(str(e)) from None
        else:
            if not gnames:
                raise BadRequest("goal names no joints")
            goal = s.space.complete(gnames, gpos, [s.space.as_mapping(start)], "goal", strict=True)
        r = self.client.plan(start, goal, planner=planner, time_limit=limit or 5.0, seed=int(get(req, "seed", 0) or 0),
                             group=group if len(joints) != s.space.dof else None, goal_pose=goal_pose,
                             scene=s.scene_id, **timing)
        code = convert.PLAN_ERROR_CODES.get(r.outcome, -1)
        out: Dict[str, Any] = {"error_code": {"val": code}, "valid": False,
                               "planning_time": float(r.stats.plan_time + r.stats.simplify_time),
                               "scene_id": s.scene_id, "message": r.message or r.outcome,
                               "trajectory": convert.joint_trajectory(joints, np.zeros((0, len(joints))), [],
                                                                      s.planning_frame)}
        if not r.solved:
            return out
        cols = [r.joint_names.index(j) for j in joints]
        check = self.client.check_path({"joint_names": list(r.joint_names), "waypoints": r.path}, scene=s.scene_id)
        if r.trajectory is not None:
            tr = r.trajectory
            trajectory = convert.joint_trajectory(joints, tr.positions[:, cols], tr.time, s.planning_frame, _stamp_now(),
                                                  tr.velocities[:, cols], tr.accelerations[:, cols])
        else:
            path = r.path[:, cols]
            times = convert.time_waypoints(path, self.velocity_limits(s, joints), scaling or 1.0)
            trajectory = convert.joint_trajectory(joints, path, times, s.planning_frame, _stamp_now())
        out.update({"valid": bool(check.free), "message": "solved" if check.free else f"re-check failed: {check}",
                    "trajectory": trajectory})
        if not check.free:
            out["error_code"] = {"val": -2}  # INVALID_MOTION_PLAN
        return out

    def track(self, q: np.ndarray, scene_id: str) -> TrackResult:
        """One track query at ``q`` with the clearance options, on the session the client keeps for
        ``scene_id`` (warm from the previous state); the previous scene version's session is ended."""
        with self._track_lock:
            if self._track_scene is not None and self._track_scene != scene_id:
                self.client.end_track(self._track_scene)
            self._track_scene = scene_id
            return self.client.track(q, scene=scene_id, horizon=self.clearance_horizon,
                                     max_pairs=self.clearance_max_pairs, per_link=self.clearance_per_link,
                                     rel_err=self.clearance_rel_err)

    def clearance(self, stamp: Optional[Mapping[str, int]] = None, frame_id: Optional[str] = None) -> Optional[Dict[str, Any]]:
        """The certified clearance at the current joint state (a proximity_msgs/Clearance-shaped dict): the
        nearest pairs within the horizon (one track query, warm from the previous state) with their
        intervals, points, normals and joint gradients, and the robot's interval and nearest pair; or None
        while some scene joint has had no value yet."""
        s = self.scene()
        cur = self.current()
        if any(n not in cur for n in s.space.names):
            return None
        q = np.array([cur[n] for n in s.space.names])
        t = self.track(q, s.scene_id)
        attached = s.info.attached_object_ids
        if t.pairs:
            # The pairs left out are no nearer than those reported: the smallest lower bound is the robot's.
            nearest = t.nearest
            assert nearest is not None
            lower, upper, pair, p1, p2 = t.lower, t.upper, nearest.pair, nearest.point_robot, nearest.point_other
        else:
            # Nothing within the horizon: the interval and the nearest pair beyond it from one ComputeDistance.
            d = self.client.distance(q, rel_err=self.clearance_rel_err, scene=s.scene_id)
            lower, upper, pair, p1, p2 = d.lower, d.upper, d.nearest.pair, d.nearest.point_robot, d.nearest.point_other
        valid = t.within_limits and lower > 0.0
        if t.within_limits and lower <= 0.0:
            valid = bool(self.client.check_state(q, scene=s.scene_id).free)
        b1, t1, b2, t2 = convert.body_types(pair, attached)
        return {"header": {"stamp": dict(stamp or _stamp_now()), "frame_id": frame_id or s.planning_frame},
                "scene_id": s.scene_id, "valid": bool(valid), "within_limits": bool(t.within_limits),
                "lower": float(lower), "upper": float(upper),
                "body_1": b1, "body_type_1": t1, "body_2": b2, "body_type_2": t2,
                "point_1": convert.point(p1), "point_2": convert.point(p2),
                "dropped": int(self.dropped_states), "joint_names": list(s.space.names),
                "pairs": [convert.clearance_pair(p, attached) for p in t.pairs]}


def _pose_kwargs(X: Sequence[float]) -> Dict[str, Any]:
    return {"position": pb.Vector3(x=X[0], y=X[1], z=X[2]),
            "orientation": pb.Quaternion(x=X[3], y=X[4], z=X[5], w=X[6])}


def robot_from_text(urdf: str, srdf: str = "", *, base_dir: str = ".", package_dirs: Optional[Mapping[str, str]] = None,
                    ros_package_path: Optional[str] = None, origin: str = "") -> RobotInput:
    """A RobotInput from URDF (and SRDF) text: its meshes read on this machine (package:// through
    ``package_dirs``, then ROS_PACKAGE_PATH as rospack finds packages; other paths from ``base_dir``)."""
    from proximity_client.bundle import bundle_from_text
    where = origin or "robot description"
    try:
        describe(urdf, srdf)
    except RobotDescriptionError as e:
        raise RobotDescriptionError(f"{where}: {e}") from None
    try:
        b = bundle_from_text(urdf, srdf, base_dir, package_dirs, ros_package_path)
    except (OSError, ValueError) as e:  # a mesh that cannot be found or read
        raise RobotDescriptionError(f"{where}: {e}") from None
    return RobotInput(b.urdf, b.srdf, b.files, origin)


def robot_from_files(urdf_file: str, srdf_file: Optional[str] = None, *,
                     package_dirs: Optional[Mapping[str, str]] = None) -> RobotInput:
    """A RobotInput from a URDF file (and SRDF file): relative mesh paths from the URDF's folder."""
    urdf = Path(urdf_file).read_bytes().decode("utf-8")
    srdf = Path(srdf_file).read_bytes().decode("utf-8") if srdf_file else ""
    return robot_from_text(urdf, srdf, base_dir=str(Path(urdf_file).resolve().parent), package_dirs=package_dirs,
                           origin=f"file {urdf_file}")


__all__ = ["BridgeCore", "RobotInput", "Refused", "robot_from_text", "robot_from_files", "DEFAULT_URDF",
           "DEFAULT_PLANNING_FRAME"]
