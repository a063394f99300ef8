"""The ROS 1 node ``proximity_bridge`` (rospy): MoveIt-shaped services and planning-scene topics over
proximityd.

Services (private names): ``~check_state_validity`` (proximity_msgs/GetStateValidity),
``~check_states`` (GetStatesValidity), ``~check_trajectory`` (CheckTrajectory), ``~plan`` (Plan).
Subscribes to ``collision_object`` (proximity_msgs/CollisionObject), ``attached_collision_object``
(AttachedCollisionObject), ``~allowed_collision_matrix`` (AllowedCollisionMatrix) and ``joint_states``
(sensor_msgs/JointState), and with ``~point_cloud_topic`` set a sensor_msgs/PointCloud2 topic kept as one
world object; publishes ``~clearance`` (proximity_msgs/Clearance) for the latest joint
state and ``~scene`` (SceneStatus, latched) after every scene change.

Parameters (private): ``~target`` (proximityd, default 127.0.0.1:50051), ``~timeout`` (s, per call),
``~robot`` (``auto``: ``~urdf_file`` if set, else the ``robot_description`` parameter if set, else
proximityd's built-in scene; or ``files``, ``parameter``, ``default``), ``~robot_description`` and
``~robot_description_semantic`` (parameter names), ``~urdf_file``, ``~srdf_file``, ``~package_dirs``
(``{name: folder}`` or ``["name=folder", ...]``), ``~urdf_dir`` (folder of relative mesh paths in a
parameter URDF), ``~planning_frame``, ``~param_poll_period`` (s), ``~clearance_rel_err``,
``~clearance_horizon`` (m, 0.25), ``~clearance_max_pairs`` (8), ``~clearance_per_link`` (false),
``~default_velocity``, ``~joint_limits_file`` (MoveIt's joint_limits.yaml; else the
``robot_description_planning/joint_limits`` parameter, as MoveIt loads it), ``~default_acceleration``
(rad/s^2 for joints those give none; 0: none; with acceleration limits ``~plan`` times time-optimally),
``~path_tolerance`` (rad; 0: the path followed exactly, stopping at each waypoint; else corners blended
within it, each blend certified, as MoveIt's TOTG path_tolerance).
Collision objects may be given in the planning frame, any robot link's frame (posed at the current
/joint_states) or any TF frame (a tf2 buffer, when python3-tf2-ros is installed),
``~joint_states_topic``, ``~point_cloud_topic`` (empty: none), ``~point_cloud_id``
(``sensed``), ``~point_cloud_radius`` (m, 0.01), ``~point_cloud_voxel_size`` (m; unset: the radius),
``~point_cloud_self_filter`` (m; unset or negative: no self filter).

Run it with ``<build>/clients/ros/proximity_bridge`` or ``scripts/ros-bridge.sh``.
"""
from __future__ import annotations

import threading
import traceback
from typing import Any, Callable, Dict, Mapping, Optional, Tuple

import rospy
from sensor_msgs.msg import JointState, PointCloud2

from proximity_client import Client, ProximityError
from proximity_msgs.msg import (AllowedCollisionMatrix, AttachedCollisionObject, Clearance, CollisionObject,
                                SceneStatus)
from proximity_msgs.srv import CheckTrajectory, GetStateValidity, GetStatesValidity, Plan

from . import ros1
from .convert import BadRequest
from .core import BridgeCore, Refused, RobotInput, robot_from_files, robot_from_text
from .robot import RobotDescriptionError, content_key


def _log(level: str, text: str) -> None:
    {"info": rospy.loginfo, "warn": rospy.logwarn, "error": rospy.logerr}.get(level, rospy.loginfo)(text)


def _joint_limits() -> Dict[str, Any]:
    """MoveIt's joint limits: ``~joint_limits_file`` (a joint_limits.yaml) if set, else the
    ``robot_description_planning/joint_limits`` parameter (what MoveIt's launch files load), else none."""
    path = str(rospy.get_param("~joint_limits_file", "") or "")
    if path:
        import yaml  # Debian's python3-yaml
        with open(path) as f:
            return yaml.safe_load(f) or {}
    planning = rospy.resolve_name("robot_description_planning/joint_limits")
    return {"joint_limits": rospy.get_param(planning)} if rospy.has_param(planning) else {}


def _tf_lookup() -> Optional[Callable[[str, str], Optional[Tuple[float, ...]]]]:
    """A lookup of TF frames in the planning frame through a tf2 buffer and listener (Debian's
    python3-tf2-ros), or None when tf2 is not installed."""
    try:
        import tf2_ros
    except ImportError:
        return None
    buffer = tf2_ros.Buffer()
    listener = tf2_ros.TransformListener(buffer)

    def lookup(frame: str, planning_frame: str) -> Optional[Tuple[float, ...]]:
        try:
            t = buffer.lookup_transform(planning_frame, frame, rospy.Time(0), rospy.Duration(0.5)).transform
        except (tf2_ros.LookupException, tf2_ros.ConnectivityException, tf2_ros.ExtrapolationException):
            return None
        return (t.translation.x, t.translation.y, t.translation.z, t.rotation.x, t.rotation.y, t.rotation.z,
                t.rotation.w)
    lookup.listener = listener  # kept alive with the lookup
    return lookup


def _number(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name} must be a number, got {value!r}")
    return float(value)


def _integer(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or int(value) != value:
        raise ValueError(f"{name} must be an integer, got {value!r}")
    return int(value)


def _optional_length(value: Any, name: str) -> Optional[float]:
    """A length parameter that may be unset: None for "", None or a negative number."""
    if value is None or value == "":
        return None
    v = _number(value, name)
    if v != v or v in (float("inf"), float("-inf")):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return None if v < 0 else v


def _package_dirs(value: Any) -> Dict[str, str]:
    if not value:
        return {}
    if isinstance(value, Mapping):
        return {str(k): str(v) for k, v in value.items()}
    if isinstance(value, str):
        value = [v for v in value.split(",") if v]
    out = {}
    for item in value:
        name, sep, folder = str(item).partition("=")
        if not sep or not name or not folder:
            raise ValueError(f"~package_dirs entry {item!r} is not NAME=FOLDER")
        out[name] = folder
    return out


class BridgeNode:
    """The rospy side: parameters, services, topics and the threads around one BridgeCore."""

    def __init__(self) -> None:
        self.target = str(rospy.get_param("~target", "127.0.0.1:50051"))
        timeout = float(rospy.get_param("~timeout", 60.0))
        self.client = Client(self.target, timeout=timeout)
        per_link = rospy.get_param("~clearance_per_link", False)
        if isinstance(per_link, str) and per_link.lower() in ("true", "false"):
            per_link = per_link.lower() == "true"
        self.core = BridgeCore(self.client, planning_frame=rospy.get_param("~planning_frame", "") or None,
                               clearance_rel_err=float(rospy.get_param("~clearance_rel_err", 0.05)),
                               clearance_horizon=_number(rospy.get_param("~clearance_horizon", 0.25),
                                                         "~clearance_horizon"),
                               clearance_max_pairs=_integer(rospy.get_param("~clearance_max_pairs", 8),
                                                            "~clearance_max_pairs"),
                               clearance_per_link=per_link,
                               default_velocity=float(rospy.get_param("~default_velocity", 1.0)),
                               joint_limits=_joint_limits(), default_acceleration=float(rospy.get_param(
                                   "~default_acceleration", 0.0)),
                               path_tolerance=float(rospy.get_param("~path_tolerance", 0.0)),
                               tf_lookup=_tf_lookup(), log=_log)
        self.mode = str(rospy.get_param("~robot", "auto"))
        if self.mode not in ("auto", "files", "parameter", "default"):
            raise ValueError(f"~robot must be auto, files, parameter or default, not {self.mode!r}")
        self.urdf_param = rospy.resolve_name(str(rospy.get_param("~robot_description", "robot_description")))
        self.srdf_param = rospy.resolve_name(str(rospy.get_param("~robot_description_semantic",
                                                                 self.urdf_param.rstrip("/") + "_semantic")))
        self.urdf_file = str(rospy.get_param("~urdf_file", "") or "")
        self.srdf_file = str(rospy.get_param("~srdf_file", "") or "")
        self.package_dirs = _package_dirs(rospy.get_param("~package_dirs", {}))
        self.urdf_dir = str(rospy.get_param("~urdf_dir", ".") or ".")
        self.poll_period = float(rospy.get_param("~param_poll_period", 1.0))
        if self.mode == "auto":
            self.mode = "files" if self.urdf_file else "parameter_or_default"
        self._source_key: Optional[str] = None
        self._clear_cond = threading.Condition()
        self._pending_stamp: Optional[Dict[str, int]] = None
        self._pending_frame = ""
        self._stopping = False
        self._wake = threading.Event()
        self.cloud_topic = str(rospy.get_param("~point_cloud_topic", "") or "")
        self.cloud_id = str(rospy.get_param("~point_cloud_id", "sensed") or "")
        if self.cloud_topic and not self.cloud_id:
            raise ValueError("~point_cloud_id is empty")
        self.cloud_radius = _optional_length(rospy.get_param("~point_cloud_radius", 0.01), "~point_cloud_radius")
        if self.cloud_radius is None:
            raise ValueError("~point_cloud_radius must be a length >= 0 (metres)")
        self.cloud_voxel = _optional_length(rospy.get_param("~point_cloud_voxel_size", ""), "~point_cloud_voxel_size")
        self.cloud_self_filter = _optional_length(rospy.get_param("~point_cloud_self_filter", ""),
                                                  "~point_cloud_self_filter")
        self._cloud_cond = threading.Condition()
        self._pending_cloud: Optional[PointCloud2] = None
        self.clouds_dropped = 0

        self.scene_pub = rospy.Publisher("~scene", SceneStatus, queue_size=1, latch=True)
        self.clearance_pub = rospy.Publisher("~clearance", Clearance, queue_size=1)
        self._load_robot()
        self.services = [
            rospy.Service("~check_state_validity", GetStateValidity,
                          self._serve(self.core.check_state_validity, GetStateValidity._response_class)),
            rospy.Service("~check_states", GetStatesValidity,
                          self._serve(self.core.check_states, GetStatesValidity._response_class)),
            rospy.Service("~check_trajectory", CheckTrajectory,
                          self._serve(self.core.check_trajectory, CheckTrajectory._response_class)),
            rospy.Service("~plan", Plan, self._serve(self.core.plan, Plan._response_class)),
        ]
        self.subscribers = [
            rospy.Subscriber("collision_object", CollisionObject, self._topic(self.core.apply_collision_object),
                             queue_size=100),
            rospy.Subscriber("attached_collision_object", AttachedCollisionObject,
                             self._topic(self.core.apply_attached_object), queue_size=100),
            rospy.Subscriber("~allowed_collision_matrix", AllowedCollisionMatrix,
                             self._topic(self.core.apply_allowed_collisions), queue_size=10),
            rospy.Subscriber(rospy.get_param("~joint_states_topic", "joint_states"), JointState, self._joint_state,
                             queue_size=1),
        ]
        self._threads = [threading.Thread(target=self._clearance_loop, name="clearance", daemon=True)]
        if self.cloud_topic:
            # The newest cloud only (a big buffer so that rospy's queue of one drops the stale ones), applied on
            # its own thread: an update never holds up /joint_states, ~clearance or the services.
            self.subscribers.append(rospy.Subscriber(self.cloud_topic, PointCloud2, self._point_cloud, queue_size=1,
                                                     buff_size=1 << 26))
            self._threads.append(threading.Thread(target=self._cloud_loop, name="point_cloud", daemon=True))
        if self.mode in ("parameter", "parameter_or_default"):
            self._threads.append(threading.Thread(target=self._watch_params, name="params", daemon=True))
        for t in self._threads:
            t.start()
        self._publish_status()
        rospy.on_shutdown(self._shutdown)
        rospy.loginfo(f"proximity_bridge: proximityd at {self.target}; services {', '.join(s.resolved_name for s in self.services)}")

    # ---- the robot -------------------------------------------------------------------------------

    def _param_robot(self) -> Tuple[Optional[str], Optional[RobotInput]]:
        """(key, robot) from the parameter server; (None, None) when the URDF parameter is not set."""
        if not rospy.has_param(self.urdf_param):
            return None, None
        urdf = str(rospy.get_param(self.urdf_param))
        srdf = str(rospy.get_param(self.srdf_param, "") or "")
        key = content_key(urdf, srdf)
        if key == self._source_key:
            return key, None
        return key, robot_from_text(urdf, srdf, base_dir=self.urdf_dir, package_dirs=self.package_dirs,
                                    origin=f"parameter {self.urdf_param}")

    def _load_robot(self) -> None:
        try:
            if self.mode == "files":
                robot = robot_from_files(self.urdf_file, self.srdf_file or None, package_dirs=self.package_dirs)
                self._source_key = robot.key
                self.core.set_robot(robot)
            elif self.mode == "default":
                self._source_key = "default"
                self.core.set_robot(None)
            else:
                self._poll_params(first=True)
        except (RobotDescriptionError, OSError) as e:
            rospy.logerr(f"proximity_bridge: {e}")
            self.core.set_robot_error(str(e))

    def _poll_params(self, first: bool = False) -> None:
        try:
            key, robot = self._param_robot()
        except RobotDescriptionError as e:
            key = content_key(str(rospy.get_param(self.urdf_param, "")), str(rospy.get_param(self.srdf_param, "") or ""))
            if key != self._source_key:
                self._source_key = key
                rospy.logerr(f"proximity_bridge: {e}")
                self.core.set_robot_error(str(e))
                self._publish_status()
            return
        if key is None:
            if self.mode == "parameter":
                if self._source_key != "missing":
                    self._source_key = "missing"
                    msg = f"parameter {self.urdf_param} is not set (the robot's URDF); waiting for it"
                    rospy.logerr(f"proximity_bridge: {msg}")
                    self.core.set_robot_error(msg)
                    self._publish_status()
            elif self._source_key != "default":
                self._source_key = "default"
                if not first:
                    rospy.logwarn(f"proximity_bridge: {self.urdf_param} is gone; using proximityd's built-in scene")
                self.core.set_robot(None)
                self._publish_status()
            return
        if robot is None:
            return
        self._source_key = key
        if not first:
            rospy.loginfo(f"proximity_bridge: {self.urdf_param} changed; re-creating the scene")
        try:
            self.core.set_robot(robot)
        except RobotDescriptionError as e:
            rospy.logerr(f"proximity_bridge: {e}")
        self._publish_status()

    def _watch_params(self) -> None:
        while not rospy.is_shutdown() and not self._stopping:
            self._wake.wait(self.poll_period)
            if rospy.is_shutdown() or self._stopping:
                return
            try:
                self._poll_params()
            except Exception as e:  # noqa: BLE001 - the watcher keeps running whatever one poll meets
                rospy.logerr(f"proximity_bridge: parameter poll failed: {e}")

    # ---- services and topics ---------------------------------------------------------------------

    def _serve(self, fn: Callable[[Any], Dict[str, Any]], response: type) -> Callable[[Any], Any]:
        def handler(req: Any) -> Any:
            try:
                return ros1.fill(response(), fn(ros1.to_dict(req)))
            except (BadRequest, Refused) as e:
                raise rospy.ServiceException(f"bad request: {e}") from None
            except ProximityError as e:
                raise rospy.ServiceException(f"proximityd at {self.target}: {e}") from None
            except Exception as e:  # noqa: BLE001 - a bug answers an error; the node keeps serving
                rospy.logerr(f"proximity_bridge: {traceback.format_exc()}")
                raise rospy.ServiceException(f"internal error: {type(e).__name__}: {e}") from None
        return handler

    def _topic(self, fn: Callable[[Any], None]) -> Callable[[Any], None]:
        def callback(msg: Any) -> None:
            try:
                fn(ros1.to_dict(msg))
            except Refused:
                pass  # logged and counted by the core
            except Exception:  # noqa: BLE001
                rospy.logerr(f"proximity_bridge: {traceback.format_exc()}")
            self._publish_status()
        return callback

    def _publish_status(self) -> None:
        try:
            self.scene_pub.publish(ros1.fill(SceneStatus(), self.core.status()))
        except Exception as e:  # noqa: BLE001 - publishing during shutdown
            rospy.logdebug(f"proximity_bridge: status not published: {e}")

    def _joint_state(self, msg: JointState) -> None:
        try:
            self.core.update_joint_state({"name": list(msg.name), "position": list(msg.position)})
        except BadRequest as e:
            rospy.logwarn_throttle(5.0, f"proximity_bridge: joint_states refused: {e}")
            return
        with self._clear_cond:
            if self._pending_stamp is not None:
                self.core.dropped_states += 1  # a newer state replaces one not answered yet
            self._pending_stamp = {"sec": int(msg.header.stamp.secs), "nanosec": int(msg.header.stamp.nsecs)}
            self._pending_frame = msg.header.frame_id
            self._clear_cond.notify()

    def _clearance_loop(self) -> None:
        while True:
            with self._clear_cond:
                while self._pending_stamp is None and not self._stopping:
                    self._clear_cond.wait(0.5)
                if self._stopping:
                    return
                stamp, self._pending_stamp = self._pending_stamp, None
            try:
                out = self.core.clearance(stamp)
                if out is not None:
                    self.clearance_pub.publish(ros1.fill(Clearance(), out))
            except (ProximityError, Refused, BadRequest) as e:
                rospy.logwarn_throttle(5.0, f"proximity_bridge: clearance not computed: {e}")
            except Exception:  # noqa: BLE001
                rospy.logerr(f"proximity_bridge: {traceback.format_exc()}")

    def _point_cloud(self, msg: PointCloud2) -> None:
        with self._cloud_cond:
            if self._pending_cloud is not None:
                self.clouds_dropped += 1  # a newer cloud replaces one not applied yet
            self._pending_cloud = msg
            self._cloud_cond.notify()

    def _cloud_loop(self) -> None:
        while True:
            with self._cloud_cond:
                while self._pending_cloud is None and not self._stopping:
                    self._cloud_cond.wait(0.5)
                if self._stopping:
                    return
                msg, self._pending_cloud = self._pending_cloud, None
            try:
                out = self.core.apply_point_cloud(ros1.to_dict(msg), self.cloud_id, self.cloud_radius,
                                                  self.cloud_voxel, self.cloud_self_filter)
                if out["nan_dropped"]:
                    rospy.logdebug(f"proximity_bridge: {self.cloud_topic}: {out['nan_dropped']} NaN point(s) dropped")
            except Refused:
                pass  # logged and counted by the core
            except Exception:  # noqa: BLE001 - a bug: logged, the next cloud tried
                rospy.logerr(f"proximity_bridge: {traceback.format_exc()}")
            if self.clouds_dropped:
                rospy.loginfo_throttle(10.0, f"proximity_bridge: {self.cloud_topic}: {self.clouds_dropped} cloud(s) "
                                             "replaced by newer ones before they were applied")
            self._publish_status()

    def _shutdown(self) -> None:
        self._stopping = True
        self._wake.set()
        with self._clear_cond:
            self._clear_cond.notify_all()
        with self._cloud_cond:
            self._cloud_cond.notify_all()
        self.client.close()


def main() -> None:
    rospy.init_node("proximity_bridge")
    try:
        BridgeNode()
    except Exception as e:  # noqa: BLE001 - a bad parameter: say which and stop
        rospy.logfatal(f"proximity_bridge: {e}")
        raise SystemExit(2)
    rospy.spin()


if __name__ == "__main__":
    main()
