"""Plain result types (dataclasses) converted from the wire messages."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import numpy as np

from ._stubs import pb


@dataclass(frozen=True)
class Pair:
    """A pair of scene geometries: the robot side and the other side (a link, attached object or object)."""

    self_collision: bool  #: robot against robot (True) or robot against a world object (False)
    robot: str            #: the robot side: a link name or an attached object id
    other: str            #: the other link or attached object (self), or the world object id
    link: str = ""        #: the robot side's link (the carrying link of an attached object)
    other_link: str = ""  #: self: the other side's link

    @property
    def names(self) -> Tuple[str, str]:
        """(robot, other)."""
        return (self.robot, self.other)

    def __str__(self) -> str:
        kind = "self" if self.self_collision else "world"
        return f"{self.robot} x {self.other} ({kind})"

    @staticmethod
    def from_proto(m: "pb.PairId") -> "Pair":
        return Pair(self_collision=m.self, robot=m.robot, other=m.other, link=m.link, other_link=m.other_link)


def _pair_or_none(has: bool, m: "pb.PairId") -> Optional[Pair]:
    return Pair.from_proto(m) if has and (m.robot or m.other) else None


@dataclass(frozen=True)
class WorkStats:
    """Work counters the server reports for one request."""

    states: int = 0
    pairs_tested: int = 0
    distance_queries: int = 0
    bv_tests: int = 0
    triangle_tests: int = 0

    @staticmethod
    def from_proto(m: "pb.WorkStats") -> "WorkStats":
        return WorkStats(m.states, m.pairs_tested, m.distance_queries, m.bv_tests, m.triangle_tests)

    def __add__(self, other: "WorkStats") -> "WorkStats":
        return WorkStats(self.states + other.states, self.pairs_tested + other.pairs_tested,
                         self.distance_queries + other.distance_queries, self.bv_tests + other.bv_tests,
                         self.triangle_tests + other.triangle_tests)


@dataclass(frozen=True)
class JointLimit:
    """Position limits of one joint (rad or m); continuous joints have -inf/+inf."""

    joint_name: str
    lower: float
    upper: float
    continuous: bool = False
    prismatic: bool = False
    velocity: float = 0.0  #: the URDF's velocity limit (rad/s or m/s); 0 when it gives none


@dataclass(frozen=True)
class GroupInfo:
    """An SRDF group: the joints it moves (in the scene's joint order) and its members as written."""

    name: str
    joints: List[str]                  #: the active joints it moves
    chains: List[Tuple[str, str]]      #: (base_link, tip_link) of its <chain> elements
    member_joints: List[str]           #: its <joint> elements
    links: List[str]                   #: its <link> elements
    subgroups: List[str]               #: its <group> elements


@dataclass(frozen=True)
class EndEffectorInfo:
    """An SRDF end effector: a group attached to a parent link (and parent group, or "")."""

    name: str
    group: str
    parent_link: str
    parent_group: str = ""


@dataclass(frozen=True)
class AllowedPairInfo:
    """A pair left out of collision checking: ``reason`` is "adjacent" (parent and child of one joint),
    "rigid" (joined by fixed joints only), "srdf" (``srdf_reason`` as the SRDF wrote it: "Never",
    "Adjacent", "Default", ...) or "user" (the scene's allowed pairs)."""

    first: str
    second: str
    reason: str
    srdf_reason: str = ""


@dataclass(frozen=True)
class SceneInfo:
    """What the server says about a loaded scene."""

    scene_id: str
    version: int
    parent_scene_id: str
    robot_name: str
    joint_names: List[str]
    limits: List[JointLimit]
    link_names: List[str]
    object_ids: List[str]
    attached_object_ids: List[str]
    named_states: Dict[str, List[float]]
    triangles: int
    #: What the server accepted but wants heard, one sentence each (allowed pairs naming unknown things).
    warnings: List[str] = field(default_factory=list)
    #: CreateScene only: True when the scene was newly loaded, False when the same content already was.
    created: Optional[bool] = None
    #: The scene's names on the server (aliases accepted wherever the id is).
    names: List[str] = field(default_factory=list)
    #: Whether the robot's self-clearance maps are filled (they fill in the background after a build;
    #: answers are exact either way, faster once filled). True for a robot without maps.
    self_clearance_filled: bool = False
    #: SRDF groups, end effectors, and every pair not checked for collision with its reason
    groups: List[GroupInfo] = field(default_factory=list)
    end_effectors: List[EndEffectorInfo] = field(default_factory=list)
    allowed_pairs: List[AllowedPairInfo] = field(default_factory=list)

    def group(self, name: str) -> GroupInfo:
        """The SRDF group ``name``; KeyError listing the groups when there is none."""
        for g in self.groups:
            if g.name == name:
                return g
        raise KeyError(f"robot {self.robot_name} has no group {name!r} (groups: "
                       f"{', '.join(g.name for g in self.groups) or 'none'})")

    @property
    def label(self) -> str:
        """The scene's first name, or its id."""
        return self.names[0] if self.names else self.scene_id

    @property
    def dof(self) -> int:
        """Number of active joints (the length of a configuration)."""
        return len(self.joint_names)

    @property
    def velocity(self) -> np.ndarray:
        """Velocity limits in joint order (rad/s or m/s; 0 where the URDF gives none)."""
        return np.array([l.velocity for l in self.limits], dtype=np.float64)

    @property
    def lower(self) -> np.ndarray:
        """Lower limits in joint order; continuous joints get -pi."""
        return np.array([-math.pi if (l.continuous or not math.isfinite(l.lower)) else l.lower
                         for l in self.limits], dtype=np.float64)

    @property
    def upper(self) -> np.ndarray:
        """Upper limits in joint order; continuous joints get +pi."""
        return np.array([math.pi if (l.continuous or not math.isfinite(l.upper)) else l.upper
                         for l in self.limits], dtype=np.float64)

    def sample(self, n: int, rng: Optional[np.random.Generator] = None) -> np.ndarray:
        """``n`` configurations drawn uniformly within the limits, shape (n, dof)."""
        rng = rng if rng is not None else np.random.default_rng()
        lo, hi = self.lower, self.upper
        return lo + rng.random((int(n), self.dof)) * (hi - lo)

    @staticmethod
    def from_proto(m: "pb.SceneInfo", created: Optional[bool] = None) -> "SceneInfo":
        return SceneInfo(
            created=created, scene_id=m.scene_id, version=m.version, parent_scene_id=m.parent_scene_id, robot_name=m.robot_name,
            joint_names=list(m.joint_names),
            limits=[JointLimit(l.joint_name, l.lower, l.upper, l.continuous, l.prismatic, l.velocity)
                    for l in m.limits],
            link_names=list(m.link_names), object_ids=list(m.object_ids),
            attached_object_ids=list(m.attached_object_ids),
            named_states={s.name: list(s.positions) for s in m.named_states}, triangles=m.triangles,
            warnings=list(m.warnings), names=list(m.names),
            self_clearance_filled=m.self_clearance_filled,
            groups=[GroupInfo(g.name, list(g.joints), list(zip(g.chain_bases, g.chain_tips)), list(g.member_joints),
                              list(g.links), list(g.subgroups)) for g in m.groups],
            end_effectors=[EndEffectorInfo(e.name, e.group, e.parent_link, e.parent_group) for e in m.end_effectors],
            allowed_pairs=[AllowedPairInfo(p.first, p.second, p.reason, p.srdf_reason) for p in m.allowed_pairs])


@dataclass(frozen=True)
class StateResult:
    """The answer to CLEAR(q)."""

    free: bool
    within_limits: bool
    contact: Optional[Pair]  #: the first contact found when not free
    stats: WorkStats

    def __bool__(self) -> bool:
        return self.free

    @staticmethod
    def from_proto(m: "pb.CheckStateResponse") -> "StateResult":
        return StateResult(m.free, m.within_limits, None if m.free else _pair_or_none(m.HasField("contact"), m.contact),
                           WorkStats.from_proto(m.stats))


@dataclass(frozen=True)
class StatesResult:
    """The answer to CLEAR over a batch: per-state arrays in request order."""

    free: np.ndarray           #: bool, shape (n,)
    within_limits: np.ndarray  #: bool, shape (n,)
    contacts: Dict[int, Pair]  #: row -> first contact, colliding rows only (when requested)
    stats: WorkStats

    @property
    def free_count(self) -> int:
        return int(np.count_nonzero(self.free))


@dataclass(frozen=True)
class PairDistance:
    """One pair's clearance interval with points (world frame, metres) realising ``upper``."""

    pair: Optional[Pair]
    lower: float
    upper: float
    point_robot: np.ndarray
    point_other: np.ndarray

    @staticmethod
    def from_proto(m: "pb.PairDistance") -> "PairDistance":
        return PairDistance(_pair_or_none(m.HasField("pair"), m.pair), m.lower, m.upper,
                            np.array([m.point_robot.x, m.point_robot.y, m.point_robot.z]),
                            np.array([m.point_other.x, m.point_other.y, m.point_other.z]))


@dataclass(frozen=True)
class DistanceResult:
    """Clearance at q as a certified interval ``lower <= clearance <= upper`` with its witness pair."""

    lower: float
    upper: float
    beyond_max_distance: bool
    nearest: PairDistance
    pairs: List[PairDistance]
    within_limits: bool
    stats: WorkStats

    @staticmethod
    def from_proto(m: "pb.ComputeDistanceResponse") -> "DistanceResult":
        return DistanceResult(m.lower_bound, m.upper_bound, m.beyond_max_distance, PairDistance.from_proto(m.nearest),
                              [PairDistance.from_proto(p) for p in m.pairs], m.within_limits,
                              WorkStats.from_proto(m.stats))


@dataclass(frozen=True)
class MotionResult:
    """The answer to LINK(q0, q1): t runs from 0 at q0 to 1 at q1."""

    free: bool
    t_free: float            #: [0, t_free] is known free
    t_collide: float         #: not free: the state at t_collide collides (-1 when free)
    contact: Optional[Pair]  #: not free: the contact at t_collide
    undecided: bool          #: certified: a graze closer than rounding can separate (reported not free)
    stats: WorkStats = field(default_factory=WorkStats)

    def __bool__(self) -> bool:
        return self.free

    @staticmethod
    def from_proto(m: "pb.MotionResult", stats: Optional["pb.WorkStats"] = None) -> "MotionResult":
        return MotionResult(m.free, m.t_free, m.t_collide,
                            None if m.free else _pair_or_none(m.HasField("contact"), m.contact), m.undecided,
                            WorkStats.from_proto(stats) if stats is not None else WorkStats())


@dataclass(frozen=True)
class PathResult:
    """The answer for a path: the first segment (waypoint i -> i + 1) that is not free, or -1."""

    free: bool
    segment: int
    motion: MotionResult
    stats: WorkStats = field(default_factory=WorkStats)

    def __bool__(self) -> bool:
        return self.free

    @staticmethod
    def from_proto(m: "pb.PathResult", stats: Optional["pb.WorkStats"] = None) -> "PathResult":
        return PathResult(m.free, m.segment, MotionResult.from_proto(m.motion),
                          WorkStats.from_proto(stats) if stats is not None else WorkStats())


@dataclass(frozen=True)
class ContactResult:
    """Time of first contact along a motion parameterised by t in [0, 1]."""

    contact: bool        #: the motion comes within ``tolerance`` of contact
    t_contact: float     #: [0, t_contact) is certified contact-free; 1 when no contact
    clearance: float     #: clearance upper bound at t_contact (metres)
    penetrating: bool    #: the exact test at t_contact collides
    undecided: bool      #: iteration limit reached
    nearest: PairDistance
    iterations: int
    stats: WorkStats

    @staticmethod
    def from_proto(m: "pb.TimeOfFirstContactResponse") -> "ContactResult":
        return ContactResult(m.contact, m.t_contact, m.clearance, m.penetrating, m.undecided,
                             PairDistance.from_proto(m.nearest), m.iterations, WorkStats.from_proto(m.stats))


#: Wire outcome -> name (planners::PlanOutcomeName).
PLAN_OUTCOMES = {
    pb.PLAN_OUTCOME_SOLVED: "solved",
    pb.PLAN_OUTCOME_TIMEOUT: "timeout",
    pb.PLAN_OUTCOME_ITERATION_LIMIT: "iteration_limit",
    pb.PLAN_OUTCOME_CANCELLED: "cancelled",
    pb.PLAN_OUTCOME_INVALID_START: "invalid_start",
    pb.PLAN_OUTCOME_INVALID_GOAL: "invalid_goal",
}
#: Planner name -> wire planner.
PLANNERS = {
    "rrt": pb.PLANNER_RRT,
    "rrt_connect": pb.PLANNER_RRT_CONNECT,
    "prm": pb.PLANNER_PRM,
    "lazy_prm": pb.PLANNER_LAZY_PRM,
}


def decode_rows(m: "pb.Configurations") -> np.ndarray:
    """The rows of a wire Configurations message (packed or repeated), shape (n, len(joint_names))."""
    dof = len(m.joint_names)
    if m.positions_f64le:
        flat = np.frombuffer(m.positions_f64le, dtype="<f8").astype(np.float64)
    else:
        flat = np.array(m.positions, dtype=np.float64)
    if dof == 0:
        return flat.reshape(0, 0)
    if flat.size % dof:
        raise ValueError(f"{flat.size} values is not a multiple of the {dof} joint names")
    return flat.reshape(-1, dof)


@dataclass(frozen=True)
class PlanStats:
    """What a Plan call did."""

    plan_time: float = 0.0      #: seconds until the raw path was found (or the planner stopped)
    simplify_time: float = 0.0  #: seconds of simplification
    iterations: int = 0         #: samples drawn
    state_checks: int = 0       #: CLEAR calls
    motion_checks: int = 0      #: decisive LINK calls (planning and simplification)
    motion_states: int = 0      #: configurations the motion checks posed
    vertices: int = 0           #: tree or roadmap vertices at the end
    edges: int = 0              #: tree or roadmap edges at the end
    raw_length: float = 0.0     #: joint-space length (rad / m) before simplification
    length: float = 0.0         #: joint-space length of the returned path
    raw_waypoints: int = 0      #: waypoints before simplification
    quick_motion_checks: int = 0     #: sampled checks that grew the trees (certified mode)
    certification_failures: int = 0  #: candidate edges the sampled check passed and certification rejected

    @staticmethod
    def from_proto(m: "pb.PlanStats") -> "PlanStats":
        return PlanStats(m.plan_time, m.simplify_time, m.iterations, m.state_checks, m.motion_checks,
                         m.motion_states, m.vertices, m.edges, m.raw_length, m.length, m.raw_waypoints,
                         m.quick_motion_checks, m.certification_failures)


@dataclass(frozen=True)
class TimedTrajectory:
    """A path timed time-optimally with velocity and acceleration limits, sampled: ``time`` (n,),
    ``positions``, ``velocities`` and ``accelerations`` (n, dof) in ``joint_names`` order; on a straight
    segment an acceleration holds from its sample to the next, on a blend the values are the arc's at the
    sample. ``waypoint_samples``: per path waypoint, its sample (at rest, or for a blended corner its arc's
    middle). ``blended_corners``: corners passed on a blend (0 without ``path_tolerance``: the path followed
    exactly, at rest at every waypoint); ``max_deviation``: the farthest a blend passes from its corner."""

    time: np.ndarray
    positions: np.ndarray
    velocities: np.ndarray
    accelerations: np.ndarray
    joint_names: List[str]
    waypoint_samples: List[int]
    blended_corners: int = 0
    max_deviation: float = 0.0

    @property
    def duration(self) -> float:
        return float(self.time[-1]) if len(self.time) else 0.0

    @staticmethod
    def from_proto(m: "pb.TimedTrajectory") -> "TimedTrajectory":
        return TimedTrajectory(np.array(m.time_from_start, dtype=np.float64), decode_rows(m.positions),
                               decode_rows(m.velocities), decode_rows(m.accelerations), list(m.positions.joint_names),
                               list(m.waypoint_samples), int(m.blended_corners), float(m.max_deviation))


@dataclass(frozen=True)
class PlanResult:
    """The answer to a Plan call. Not solving (time out, colliding start or goal) is an outcome, not an error."""

    #: "solved", "timeout", "iteration_limit", "cancelled", "invalid_start" or "invalid_goal"
    outcome: str
    #: solved: waypoints (n, dof) in ``joint_names`` order, from exactly the start to exactly the goal, each
    #: straight segment checked as the request's mode says; otherwise shape (0, dof)
    path: np.ndarray
    joint_names: List[str]
    stats: PlanStats
    planner: str   #: the planner that ran ("rrt_connect", ...)
    message: str   #: not solved: why (e.g. "start collides: link_2 x table (world)")
    #: solved: when each waypoint is reached (seconds, the first 0), each segment lasting the least time the
    #: joints' velocity limits allow (see :func:`proximity_client.kinematics.time_from_start`); empty when not
    #: solved or when no joint has a velocity limit
    time_from_start: np.ndarray = field(default_factory=lambda: np.zeros(0))
    #: what the request gave that the server accepted as MoveIt does, one sentence each: start or goal values
    #: for joints the scene lacks (ignored), values just outside a joint limit (clamped to it)
    warnings: List[str] = field(default_factory=list)
    #: solved with timing asked: the path timed time-optimally with acceleration limits; else None
    trajectory: Optional[TimedTrajectory] = None

    @property
    def solved(self) -> bool:
        return self.outcome == "solved"

    def __bool__(self) -> bool:
        return self.solved

    def as_path(self) -> Dict[str, object]:
        """The path as ``{"joint_names": [...], "waypoints": array}``: what check_path, validate_paths and
        ``proximity validate`` (as JSON) accept."""
        return {"joint_names": list(self.joint_names), "waypoints": self.path}

    @staticmethod
    def from_proto(m: "pb.PlanResponse") -> "PlanResult":
        names = list(m.path.joint_names)
        path = decode_rows(m.path)
        planner = next((k for k, v in PLANNERS.items() if v == m.planner), "unspecified")
        return PlanResult(PLAN_OUTCOMES.get(m.outcome, "unspecified"), path, names, PlanStats.from_proto(m.stats),
                          planner, m.message, np.array(m.time_from_start, dtype=np.float64), list(m.warnings),
                          TimedTrajectory.from_proto(m.trajectory) if m.HasField("trajectory") else None)


@dataclass(frozen=True)
class IkResult:
    """The answer to a GetIK call. Finding no solution is an answer (``found`` False, ``message`` says why)."""

    found: bool
    #: found: one value per joint in ``joint_names`` order (the scene's), within the joint limits; else empty
    solution: np.ndarray
    joint_names: List[str]
    position_error: float     #: metres from the link's point to the target position
    orientation_error: float  #: radians between the link's and the target's orientation
    attempts: int             #: descents tried
    rejected: int             #: solutions found in collision (avoid_collisions)
    message: str
    warnings: List[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return self.found

    def as_dict(self) -> Dict[str, float]:
        """The solution as {joint name: value} (empty when none was found)."""
        return dict(zip(self.joint_names, (float(v) for v in self.solution)))

    @staticmethod
    def from_proto(m: "pb.GetIKResponse") -> "IkResult":
        return IkResult(m.found, np.array(m.solution.positions, dtype=np.float64), list(m.solution.joint_names),
                        m.position_error, m.orientation_error, m.attempts, m.rejected, m.message, list(m.warnings))


def _pose7(m: "pb.Pose") -> np.ndarray:
    """A wire pose as [x, y, z, qx, qy, qz, qw] (all-zero quaternion: the identity)."""
    o = m.orientation
    q = [o.x, o.y, o.z, o.w] if (o.x or o.y or o.z or o.w) else [0.0, 0.0, 0.0, 1.0]
    return np.array([m.position.x, m.position.y, m.position.z, *q], dtype=np.float64)


@dataclass(frozen=True)
class LinkPoses:
    """Every link's pose in the world at one or more configurations (GetLinkPoses)."""

    link_names: List[str]       #: the scene's link order (root first, parents before children)
    #: shape (n, len(link_names), 7): position x, y, z (metres), then the unit quaternion x, y, z, w (w >= 0)
    poses: np.ndarray
    base_pose: np.ndarray       #: the robot's root link in the world, [x, y, z, qx, qy, qz, qw]
    within_limits: np.ndarray   #: bool, shape (n,)

    def __len__(self) -> int:
        return int(self.poses.shape[0])

    def pose(self, link: str, index: int = 0) -> np.ndarray:
        """The pose [x, y, z, qx, qy, qz, qw] of ``link`` at configuration ``index``."""
        return self.poses[index, self.link_names.index(link)]

    def matrices(self) -> np.ndarray:
        """The poses as homogeneous matrices, shape (n, len(link_names), 4, 4)."""
        from .kinematics import pose_matrices
        return pose_matrices(self.poses)

    @staticmethod
    def from_proto(m: "pb.GetLinkPosesResponse") -> "LinkPoses":
        names = list(m.link_names)
        flat = np.frombuffer(m.poses_f64le, dtype="<f8").astype(np.float64)
        return LinkPoses(names, flat.reshape(int(m.count), len(names), 7), _pose7(m.base_pose),
                         np.array(m.within_limits, dtype=bool))


@dataclass(frozen=True)
class GeometryPart:
    """One part of a scene's geometry: a triangle mesh in the part's frame, posed in its owner's frame."""

    vertices: np.ndarray   #: float64, shape (v, 3), metres, in the part frame
    triangles: np.ndarray  #: uint32, shape (t, 3), vertex indices
    pose: np.ndarray       #: the part frame in its owner's frame, [x, y, z, qx, qy, qz, qw]
    #: what the queries use: "mesh", "box", "sphere", "cylinder", "capsule", "cone" or "convex_hull"
    shape: str
    hull: bool = False     #: a mesh sent as its convex hull (to stay within max_triangles)

    @staticmethod
    def from_proto(m: "pb.GeometryPart") -> "GeometryPart":
        return GeometryPart(np.array(m.mesh.vertices, dtype=np.float64).reshape(-1, 3),
                            np.array(m.mesh.triangles, dtype=np.uint32).reshape(-1, 3), _pose7(m.pose), m.shape, m.hull)


@dataclass(frozen=True)
class GeometryGroup:
    """The parts of one link, world object or attached object."""

    name: str                   #: link name, world object id or attached object id
    parts: List[GeometryPart]
    link: str = ""              #: attached objects: the carrying link

    @staticmethod
    def from_proto(m: "pb.GeometryGroup") -> "GeometryGroup":
        return GeometryGroup(m.name, [GeometryPart.from_proto(p) for p in m.parts], m.link)


@dataclass(frozen=True)
class SceneGeometry:
    """A scene's geometry as triangle meshes (GetSceneGeometry): links and attached objects in their link
    frames, world objects in the world."""

    scene_id: str
    links: List[GeometryGroup]             #: every link in the scene's link order
    objects: List[GeometryGroup]           #: world objects (parts posed in the world)
    attached_objects: List[GeometryGroup]  #: parts posed in the carrying link's frame
    base_pose: np.ndarray                  #: the robot's root link in the world
    triangles: int                         #: triangles in all
    hull_parts: int                        #: meshes sent as their convex hulls

    @staticmethod
    def from_proto(m: "pb.GetSceneGeometryResponse") -> "SceneGeometry":
        return SceneGeometry(m.scene_id, [GeometryGroup.from_proto(g) for g in m.links],
                             [GeometryGroup.from_proto(g) for g in m.objects],
                             [GeometryGroup.from_proto(g) for g in m.attached_objects], _pose7(m.base_pose),
                             int(m.triangles), int(m.hull_parts))


__all__ = ["Pair", "WorkStats", "JointLimit", "SceneInfo", "StateResult", "StatesResult", "PairDistance",
           "DistanceResult", "MotionResult", "PathResult", "ContactResult", "PlanStats", "PlanResult", "LinkPoses",
           "GeometryPart", "GeometryGroup", "SceneGeometry", "TrackFeature", "TrackedPair", "TrackResult"]


def _vec(m: "pb.Vector3") -> np.ndarray:
    return np.array([m.x, m.y, m.z])


_METHODS = {0: "", 1: "convex", 2: "mesh_bracket", 3: "apart", 4: "cloud"}


@dataclass(frozen=True)
class PairContact:
    """One colliding pair: penetration depth (metres, padding included) with its certified bracket
    ``depth_lower <= depth <= depth_upper``, the unit normal from the robot side towards the other side,
    the deepest points on each side and the contact points (world frame). ``method`` says how the depth
    was found: ``"convex"`` (EPA, exact), ``"mesh_bracket"`` (non-convex meshes: the deepest intersecting
    triangle pair, bounded above by the hulls' depth), ``"cloud"`` (a point cloud: the deepest ball's exact depth) or
    ``"apart"`` (within the padding only)."""

    pair: Pair
    depth: float
    depth_lower: float
    depth_upper: float
    normal: np.ndarray
    point_robot: np.ndarray
    point_other: np.ndarray
    points: np.ndarray         #: (n, 3) contact points, deepest first
    point_depths: np.ndarray   #: (n,) the local depth at each point
    padding: float
    method: str
    geometry_pairs: int

    @property
    def error_bound(self) -> float:
        """How far the true depth may lie from ``depth`` (0 for convex pieces)."""
        return self.depth_upper - self.depth_lower

    @staticmethod
    def from_proto(m: "pb.PairContact") -> "PairContact":
        pts = np.array([[p.position.x, p.position.y, p.position.z] for p in m.points], dtype=np.float64).reshape(-1, 3)
        return PairContact(Pair.from_proto(m.pair), m.depth, m.depth_lower, m.depth_upper, _vec(m.normal),
                           _vec(m.point_robot), _vec(m.point_other), pts,
                           np.array([p.depth for p in m.points], dtype=np.float64), m.padding,
                           _METHODS.get(m.method, str(m.method)), m.geometry_pairs)


@dataclass(frozen=True)
class ContactsResult:
    """Every colliding pair at a state, deepest first (empty when the state is free)."""

    contacts: List[PairContact]
    truncated: bool
    within_limits: bool
    stats: WorkStats

    @property
    def free(self) -> bool:
        return not self.contacts

    @staticmethod
    def from_proto(m: "pb.ComputeContactsResponse") -> "ContactsResult":
        return ContactsResult([PairContact.from_proto(c) for c in m.contacts], m.truncated, m.within_limits,
                              WorkStats.from_proto(m.stats))


@dataclass(frozen=True)
class SignedDistance:
    """Signed distance of a named pair (metres; negative inside: minus the penetration depth), certified
    ``lower <= distance <= upper``, with the normal from the robot side towards the other and the closest
    (or deepest) points on each side."""

    pair: Pair
    distance: float
    lower: float
    upper: float
    normal: np.ndarray
    point_robot: np.ndarray
    point_other: np.ndarray
    allowed: bool
    method: str
    within_limits: bool

    @staticmethod
    def from_proto(m: "pb.ComputeSignedDistanceResponse") -> "SignedDistance":
        return SignedDistance(Pair.from_proto(m.pair), m.distance, m.lower, m.upper, _vec(m.normal),
                              _vec(m.point_robot), _vec(m.point_other), m.allowed,
                              _METHODS.get(m.method, str(m.method)), m.within_limits)


#: Wire TrackFeatureType -> name.
_FEATURE_TYPES = {0: "none", 1: "vertex", 2: "edge", 3: "face", 4: "triangle"}
#: Wire TrackMethod -> name.
_TRACK_METHODS = {0: "", 1: "vclip", 2: "gjk", 3: "walk"}


@dataclass(frozen=True)
class TrackFeature:
    """A closest feature on one side of a tracked pair: a ``"vertex"``, ``"edge"`` or ``"face"`` of the
    side's convex polyhedron (its hull's), a ``"triangle"`` of its mesh (index as loaded), or ``"none"``
    (a curved side: sphere, capsule, cylinder, cone). The same from frame to frame while it stays closest."""

    type: str
    index: int  #: -1 with "none"

    @staticmethod
    def from_proto(m: "pb.TrackFeature") -> "TrackFeature":
        kind = _FEATURE_TYPES.get(m.type, str(m.type))
        return TrackFeature(kind, -1 if kind == "none" else m.index)


@dataclass(frozen=True)
class TrackedPair:
    """One of the nearest pairs of a tracked frame: its certified clearance interval ``lower <= clearance
    <= upper`` (metres, padding subtracted) with the witness points realising ``upper`` (world frame), the
    signed distance (negative by the overlap depth for overlapping convex pairs), the unit ``normal``
    (moving the robot's witness along it increases the distance), the closest features on both sides,
    whether they are those of the previous frame, how the distance was found (``"vclip"``, ``"gjk"`` or
    ``"walk"``) and the ``gradient`` of the distance with respect to the joints (shape ``(dof,)`` in the
    scene's joint order; empty when not asked for)."""

    pair: Pair
    lower: float
    upper: float
    point_robot: np.ndarray
    point_other: np.ndarray
    signed_distance: float
    normal: np.ndarray
    feature_robot: TrackFeature
    feature_other: TrackFeature
    same_features: bool
    method: str
    gradient: np.ndarray

    @property
    def names(self) -> Tuple[str, str]:
        """(robot, other)."""
        return self.pair.names

    @staticmethod
    def from_proto(m: "pb.TrackedPair") -> "TrackedPair":
        d = m.distance
        return TrackedPair(Pair.from_proto(d.pair), d.lower, d.upper, _vec(d.point_robot), _vec(d.point_other),
                           m.signed_distance, _vec(m.normal), TrackFeature.from_proto(m.feature_robot),
                           TrackFeature.from_proto(m.feature_other), m.same_features,
                           _TRACK_METHODS.get(m.method, str(m.method)), np.array(m.gradient, dtype=np.float64))


@dataclass(frozen=True)
class TrackResult:
    """One tracked frame (a session's track query): the nearest pairs within ``horizon``, nearest first
    (by upper bound), and what the server did. A pair left out has a lower bound at least the
    ``max_pairs``-th upper bound reported (per link with ``per_link``) or lies beyond the horizon, so
    :attr:`lower` is a certified lower bound on the clearance (over the pairs asked for)."""

    pairs: List[TrackedPair]
    within_limits: bool
    horizon: float       #: metres: the horizon asked for
    candidates: int      #: geometry pairs the broad phase found within the horizon
    decided: int         #: pairs whose distance was computed (others were left out on bounds)
    vclip: int           #: V-Clip queries (exact pairs and hull bounds)
    gjk: int             #: GJK / EPA queries
    walks: int           #: hierarchy walks
    same_features: int   #: reported pairs whose features did not change since the previous frame
    stats: WorkStats

    @property
    def nearest(self) -> Optional[TrackedPair]:
        """The pair with the smallest upper bound, or None when nothing is within the horizon."""
        return self.pairs[0] if self.pairs else None

    @property
    def lower(self) -> float:
        """Certified lower bound on the clearance: the smallest reported lower bound, or the horizon when
        no pair is within it."""
        return min((p.lower for p in self.pairs), default=self.horizon)

    @property
    def upper(self) -> float:
        """Upper bound on the clearance: the nearest pair's upper bound (``inf`` when none is reported)."""
        return self.pairs[0].upper if self.pairs else math.inf

    @property
    def gradients(self) -> np.ndarray:
        """Every reported pair's gradient, shape ``(len(pairs), dof)`` (``(n, 0)`` without gradients)."""
        if not self.pairs:
            return np.zeros((0, 0))
        return np.stack([p.gradient for p in self.pairs])

    @staticmethod
    def from_proto(m: "pb.TrackResponse", horizon: float) -> "TrackResult":
        return TrackResult([TrackedPair.from_proto(p) for p in m.pairs], m.within_limits, float(horizon), m.candidates,
                           m.decided, m.vclip, m.gjk, m.walks, m.same_features, WorkStats.from_proto(m.stats))
