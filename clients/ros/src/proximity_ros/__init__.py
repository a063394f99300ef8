"""The Proximity ROS bridge: MoveIt-shaped state validity, trajectory checks, planning and planning-scene
mirroring over proximityd.

* :mod:`proximity_ros.convert`: ROS message shapes (plain data, as ``ros2 topic echo --yaml`` prints
  them) to and from proximityd requests; no ROS needed (shared by the ROS 1 and ROS 2 sides).
* :mod:`proximity_ros.core`: :class:`~proximity_ros.core.BridgeCore`, the bridge's logic on that plain
  data over :class:`proximity_client.Client`; no ROS needed.
* :mod:`proximity_ros.robot`: what the bridge reads from URDF and SRDF (groups, velocity limits, frames).
* :mod:`proximity_ros.ros1`: genpy messages to and from plain data.
* :mod:`proximity_ros.node`: the rospy node ``proximity_bridge``.
"""
