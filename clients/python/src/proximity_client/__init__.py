"""Python client of proximityd, the Proximity motion-planning proximity service.

    from proximity_client import Client
    with Client("127.0.0.1:50051") as c:
        info = c.get_scene()                                  # the built-in scene ("default")
        free = c.check_states(info.sample(10_000))            # bool array
        r = c.check_motion(q0, q1)                            # certified LINK
        print(r.free, r.t_free, r.t_collide, r.contact)
        p = c.plan(q0, q1, time_limit=5.0)                    # RRT-Connect, certified edges
        print(p.outcome, p.path.shape, p.stats.length)

Errors raise :class:`ProximityError` subclasses carrying ``.code`` (``grpc.StatusCode``) and ``.details``.
The gRPC stubs are generated at build time; see ``proximity_client._stubs`` for how they are found.
"""
from __future__ import annotations

__version__ = "0.1.0"

from . import geometry, kinematics
from .channel import RetryPolicy, resolve_target
from .client import DEFAULT_SCENE, DEFAULT_TARGET, MAX_MESSAGE_BYTES, Client, PathStream, Session
from .errors import (AbortedError, AlreadyExistsError, CancelledError, DeadlineExceededError,
                     FailedPreconditionError, InternalError, InvalidArgumentError, NotFoundError, ProximityError,
                     ProximityWarning, ResourceExhaustedError, UnavailableError, UnimplementedError)
from .results import (ContactResult, ContactsResult, DistanceResult, GeometryGroup, GeometryPart, IkResult, JointLimit,
                      LinkPoses, TimedTrajectory,
                      MotionResult, Pair, PairContact, PairDistance, PathResult, PlanResult, PlanStats, SceneGeometry, SceneInfo,
                      SignedDistance, StateResult, StatesResult, TrackedPair, TrackFeature, TrackResult, WorkStats)

__all__ = [
    "__version__", "geometry", "kinematics", "Client", "PathStream", "Session", "DEFAULT_SCENE", "DEFAULT_TARGET",
    "MAX_MESSAGE_BYTES", "RetryPolicy", "resolve_target",
    "ProximityError", "InvalidArgumentError", "NotFoundError", "AlreadyExistsError", "FailedPreconditionError",
    "AbortedError", "ResourceExhaustedError", "DeadlineExceededError", "CancelledError", "UnavailableError",
    "UnimplementedError", "InternalError", "ProximityWarning",
    "ContactResult", "DistanceResult", "JointLimit", "MotionResult", "Pair", "PairDistance", "PathResult",
    "SceneInfo", "StateResult", "StatesResult", "WorkStats", "PlanResult", "PlanStats", "LinkPoses", "SceneGeometry",
    "GeometryGroup", "GeometryPart", "ContactsResult", "PairContact", "SignedDistance", "TrackResult", "TrackedPair",
    "TrackFeature", "IkResult", "TimedTrajectory",
]
