"""The gRPC client of proximityd (``proximity.v1.ProximityService``)."""
from __future__ import annotations

import collections
import math
import queue
import sys
import threading
import time
import warnings
from collections import deque
from typing import (Any, Callable, Deque, Dict, Iterable, Iterator, List, Literal, Mapping, Optional, Sequence,
                    Tuple, TypeVar, Union, overload)

import grpc
import numpy as np

from . import geometry
from .channel import RetryPolicy, Target, channel_options, resolve_target
from ._stubs import health_pb, health_pb_grpc, pb, pb_grpc
from .errors import InvalidArgumentError, ProximityError, ProximityWarning, error_for, from_rpc_error
from .results import (PLANNERS, ContactResult, ContactsResult, DistanceResult, IkResult, LinkPoses, MotionResult, Pair,
                      PathResult, PlanResult,
                      SceneGeometry, SceneInfo, SignedDistance, StateResult, StatesResult, TrackResult, WorkStats)

#: Unary methods whose responses carry the server's leniency warnings (warned by _unary).
_WARNING_METHODS = frozenset({"CheckState", "CheckMotion", "ComputeDistance", "TimeOfFirstContact", "GetLinkPoses",
                              "ComputeContacts", "ComputeSignedDistance"})

#: A configuration: values in the scene's joint order, a {joint name: value} mapping, or the name of an
#: SRDF group state.
Configuration = Union[Sequence[float], np.ndarray, Mapping[str, float], str]
#: A path: waypoints (n, dof) in the scene's joint order (or in ``joint_names`` order), or a mapping
#: {"joint_names": [...], "waypoints": [[...], ...]}.
PathLike = Union[np.ndarray, Sequence[Sequence[float]], Mapping[str, Any]]

DEFAULT_TARGET = "127.0.0.1:50051"
DEFAULT_SCENE = "default"
MAX_MESSAGE_BYTES = 64 << 20

_T = TypeVar("_T")
_UNSET: Any = object()

_MODES = {
    "certified": pb.MOTION_MODE_CERTIFIED,
    "discrete": pb.MOTION_MODE_DISCRETE,
}


def _mode(mode: str) -> int:
    try:
        return _MODES[mode]
    except KeyError:
        raise ValueError(f"mode must be 'certified' or 'discrete', not {mode!r}") from None


_CONVEX = {
    "vclip": pb.TRACK_CONVEX_METHOD_VCLIP,
    "gjk": pb.TRACK_CONVEX_METHOD_GJK,
}
#: Track query defaults (the server's for a zero horizon and max_pairs).
DEFAULT_TRACK_HORIZON = 0.25
DEFAULT_TRACK_PAIRS = 8
_UINT32_MAX = (1 << 32) - 1


def track_request(q: Configuration, horizon: float = DEFAULT_TRACK_HORIZON, max_pairs: int = DEFAULT_TRACK_PAIRS,
                  per_link: bool = False, world: bool = True, self_pairs: bool = True, rel_err: float = 0.0,
                  abs_err: float = 0.0, gradient: bool = True, convex: str = "vclip") -> "pb.TrackRequest":
    """The wire TrackRequest of :meth:`Session.track`'s arguments. Values the wire cannot carry raise
    ValueError naming the argument (``max_pairs`` below 0, an unknown ``convex``); the server checks the
    rest (the configuration, horizon, max_pairs and budgets) and names the field it refuses."""
    try:
        method = _CONVEX[str(convex).lower().replace("-", "")]
    except KeyError:
        raise ValueError(f"convex must be 'vclip' or 'gjk', not {convex!r}") from None
    if isinstance(max_pairs, bool) or not isinstance(max_pairs, (int, np.integer)):
        raise ValueError(f"max_pairs must be an int, not {max_pairs!r}")
    if not 0 <= int(max_pairs) <= _UINT32_MAX:
        raise ValueError(f"max_pairs must be >= 0 (0 means {DEFAULT_TRACK_PAIRS}; the server allows at most 4096), "
                         f"got {max_pairs}")
    return pb.TrackRequest(state=joint_positions(q), horizon=float(horizon), max_pairs=int(max_pairs),
                           per_link=bool(per_link), exclude_world=not world, exclude_self=not self_pairs,
                           rel_err=float(rel_err), abs_err=float(abs_err), skip_gradient=not gradient, convex=method)


def _planner(name: str) -> int:
    """The wire planner of a name: "rrt", "rrt_connect", "prm", "lazy_prm" (also "RRTConnect", "LazyPRM",
    "rrtconnect": case, "_" and "-" are ignored)."""
    key = str(name).lower().replace("_", "").replace("-", "")
    for k, v in PLANNERS.items():
        if k.replace("_", "") == key:
            return v
    raise ValueError(f"planner must be one of {', '.join(PLANNERS)}, not {name!r}")


def joint_positions(q: Configuration) -> "pb.JointPositions":
    """The wire form of one configuration (values are not validated here: the server checks them)."""
    if isinstance(q, str):
        return pb.JointPositions(named_state=q)
    if isinstance(q, Mapping):
        return pb.JointPositions(joint_names=[str(k) for k in q.keys()], positions=[float(v) for v in q.values()])
    arr = np.asarray(q, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"a configuration is a 1-D sequence of joint values, got shape {arr.shape}")
    return pb.JointPositions(positions=arr.tolist())


def configurations(rows: "np.ndarray | Sequence[Sequence[float]]", joint_names: Optional[Sequence[str]] = None,
                   encoding: str = "packed") -> "pb.Configurations":
    """The wire form of many configurations, row after row.

    ``encoding`` is ``"packed"`` (little-endian float64 bytes, the fast path) or ``"repeated"``
    (``repeated double``). Rows must all have the same length.
    """
    arr = np.asarray(rows, dtype="<f8")
    if arr.ndim == 1:
        arr = arr.reshape(1, -1)
    if arr.ndim != 2:
        raise ValueError(f"configurations must have shape (n, dof), got {arr.shape}")
    # The shape travels with the values: the server refuses a width that is not the scene's joint count.
    msg = pb.Configurations(joint_names=list(joint_names or ()), width=arr.shape[1], count=arr.shape[0])
    if encoding == "packed":
        msg.positions_f64le = np.ascontiguousarray(arr).tobytes()
    elif encoding == "repeated":
        msg.positions.extend(arr.ravel().tolist())
    else:
        raise ValueError(f"encoding must be 'packed' or 'repeated', not {encoding!r}")
    return msg


def _path_parts(path: PathLike, joint_names: Optional[Sequence[str]]) -> Tuple[np.ndarray, Optional[List[str]]]:
    if isinstance(path, Mapping):
        names = path.get("joint_names") or joint_names
        return np.asarray(path["waypoints"], dtype=np.float64), (list(names) if names else None)
    return np.asarray(path, dtype=np.float64), (list(joint_names) if joint_names else None)


def _pem(value: Union[str, bytes]) -> bytes:
    """PEM bytes, or the bytes of the PEM file at the path ``value``."""
    if isinstance(value, bytes):
        return value
    with open(value, "rb") as f:
        return f.read()


class _BearerToken(grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor,
                   grpc.StreamUnaryClientInterceptor, grpc.StreamStreamClientInterceptor):
    """Adds ``authorization: Bearer <token>`` metadata to every call."""

    def __init__(self, token: str) -> None:
        self._header = ("authorization", f"Bearer {token}")

    def _details(self, details: Any) -> Any:
        metadata = list(details.metadata or ()) + [self._header]
        return _CallDetails(details.method, details.timeout, metadata, details.credentials,
                            getattr(details, "wait_for_ready", None), getattr(details, "compression", None))

    def intercept_unary_unary(self, continuation, details, request):  # noqa: ANN001, ANN201
        return continuation(self._details(details), request)

    def intercept_unary_stream(self, continuation, details, request):  # noqa: ANN001, ANN201
        return continuation(self._details(details), request)

    def intercept_stream_unary(self, continuation, details, requests):  # noqa: ANN001, ANN201
        return continuation(self._details(details), requests)

    def intercept_stream_stream(self, continuation, details, requests):  # noqa: ANN001, ANN201
        return continuation(self._details(details), requests)


class _CallDetails(collections.namedtuple("_CallDetails", ("method", "timeout", "metadata", "credentials",
                                                           "wait_for_ready", "compression")),
                   grpc.ClientCallDetails):
    pass


class PathStream:
    """Results of a ValidatePaths call as they arrive: iterate for ``(index, PathResult)`` pairs.

    The server streams one result per path as each finishes, in any order. ``cancel()`` stops the call;
    iterating afterwards raises :class:`~proximity_client.errors.CancelledError`.
    """

    def __init__(self, call: Any, total: int) -> None:
        self._call = call
        self.total = total

    def __iter__(self) -> Iterator[Tuple[int, PathResult]]:
        try:
            for msg in self._call:
                yield msg.index, PathResult.from_proto(msg.result, msg.stats)
        except grpc.RpcError as e:
            raise from_rpc_error(e, "ValidatePaths") from None

    def cancel(self) -> bool:
        """Cancels the stream (the server stops working on it). True when the call was still running."""
        return bool(self._call.cancel())


_SESSION_END = object()


def _reset_by_proxy(e: ProximityError) -> bool:
    """Whether a call failed because an HTTP/2 intermediary reset its stream with INTERNAL_ERROR: an L7
    proxy (nginx's grpc_pass) whose replica died after answering had begun cannot send a status, so it
    resets the client's stream, which gRPC reports as INTERNAL "Received RST_STREAM with error code 2".
    proximityd itself ends every call with a status. Such a call is repeated as after UNAVAILABLE."""
    return e.code == grpc.StatusCode.INTERNAL and "RST_STREAM with error code 2" in e.details


class Session:
    """A query session on one scene (the ``Session`` RPC): one stream, opened once, answering batches of
    CLEAR, LINK, distance and track queries in order, with the server's caches kept warm from query to
    query (and one clearance tracker, warm from one :meth:`track` to the next).

    Made by :meth:`Client.session`; use it as a context manager (or call :meth:`close`). Each method is
    one round trip; the batch methods send all their queries in one. A query the server cannot answer
    (a malformed configuration, a bad mode) raises the error of that query and the session goes on; a
    stream that ends (its deadline, the server's ``--max-call-seconds``, a drain, a protocol violation)
    raises its status, after which the session is closed: open a new one. Two endings are ridden
    through as unary calls ride through them, by opening the session again (on whichever replica
    answers; the server's caches start cold there) and repeating the round trip: a stream lost with its
    server (UNAVAILABLE: a replica killed, restarting or draining; or reset by an L7 proxy whose replica
    died), at most ``retry.rounds`` times with backoff; and NOT_FOUND at open for one of the client's
    own scenes (a replica that never saw it, or restarted), after the client re-sent the scene
    (``auto_restore``). ``reopened`` counts them. Not thread-safe: one per thread.
    """

    def __init__(self, client: "Client", scene: str, timeout: Optional[float], cold_caches: bool) -> None:
        self.scene = scene
        self._client = client
        self._timeout = timeout
        self._cold_caches = cold_caches
        self._closed = False
        self.round_trips = 0
        #: The scene's content id, joint count and the server's batch limit (after the first round trip).
        self.scene_id: Optional[str] = None
        self.dof: Optional[int] = None
        self.max_batch: Optional[int] = None
        #: Times the session was opened again (its server lost, or its scene re-sent).
        self.reopened = 0
        self._start()

    def _start(self) -> None:
        """Opens the stream (its first request will carry ``open``)."""
        self._queue: "queue.Queue[Any]" = queue.Queue()
        self._open: Optional["pb.SessionOpen"] = pb.SessionOpen(scene_id=self.scene, cold_caches=self._cold_caches)
        try:
            self._responses = self._client._stub.Session(iter(self._queue.get, _SESSION_END), timeout=self._timeout)
        except grpc.RpcError as e:
            raise from_rpc_error(e, "Session") from None

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        # A session dropped without close(): end its request stream so that the call does not wait for
        # its deadline.
        if not getattr(self, "_closed", True):
            self._queue.put(_SESSION_END)

    def close(self) -> None:
        """Ends the stream (the server ends the call OK). Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._queue.put(_SESSION_END)
        try:
            for _ in self._responses:
                pass
        except grpc.RpcError:
            pass

    def run(self, queries: Sequence["pb.SessionQuery"], until_invalid: bool = False,
            chains: Optional[Sequence[int]] = None,
            after: Optional[Sequence[int]] = None) -> List["pb.SessionAnswer"]:
        """One round trip with raw ``pb.SessionQuery`` messages: their ``pb.SessionAnswer`` messages in order
        (with ``until_invalid``, up to the first that is not free). ``chains`` (with ``until_invalid``):
        the queries are consecutive chains of these lengths, each answered up to its own first query that is
        not free, the others going on (a planner's batch of tree extensions in one round trip); the
        answers are the chains' prefixes in order, matched to queries by ``id``. ``after`` (with
        ``chains``, one entry per chain): 0, or k >= 1 to answer the chain only when chain k (counted from
        1, an earlier one) was answered in full and free; a skipped chain gets no answers."""
        if self._closed:
            raise error_for(grpc.StatusCode.CANCELLED, "the session is closed", "Session")
        request = pb.SessionRequest(queries=list(queries), until_invalid=until_invalid, chains=list(chains or []),
                                    after=list(after or []))
        client, restores, rounds = self._client, 0, 0
        while True:
            if self._open is not None:
                request.open.CopyFrom(self._open)
            self._queue.put(request)
            try:
                response = next(self._responses)
                break
            except StopIteration:
                self._closed = True
                raise error_for(grpc.StatusCode.INTERNAL, "the session ended without an answer", "Session") from None
            except grpc.RpcError as e:
                error = from_rpc_error(e, "Session")
            # The stream has ended. Only opening can fail NOT_FOUND (the server holds the scene for the
            # session's life): re-send the scene and open the session again, on whichever server answers.
            # A lost server: open the session again after a backoff. The queries are idempotent.
            self._queue.put(_SESSION_END)
            restore = error.code == grpc.StatusCode.NOT_FOUND and self._open is not None and client.auto_restore \
                and restores < client.restore_rounds and client.owns_scene(self.scene)
            if not restore and not client._backed_off(error, rounds):
                self._closed = True
                raise error from None
            if restore:
                restores += 1
            else:
                rounds += 1
            try:
                if restore:
                    client.restore_scene(self.scene)
                self._start()
            except ProximityError:
                self._closed = True
                raise
            self.reopened += 1
        self.round_trips += 1
        if self._open is not None:
            self._open = None
            self.scene_id = response.opened.scene_id
            self.dof = response.opened.dof
            self.max_batch = response.opened.max_batch
        return list(response.answers)

    def _answers(self, queries: List["pb.SessionQuery"], kind: str, until_invalid: bool = False) -> List[Any]:
        out = []
        for a in self.run(queries, until_invalid):
            if a.WhichOneof("answer") == "error":
                raise error_for(grpc.StatusCode(_CODES[a.error.code]), a.error.message, "Session")
            out.append(getattr(a, kind))
        return out

    def check_state(self, q: Configuration) -> StateResult:
        """CLEAR(q), as :meth:`Client.check_state`."""
        return self.check_states_detailed([q])[0]

    def check_states_detailed(self, states: Sequence[Configuration]) -> List[StateResult]:
        """CLEAR at each configuration, in one round trip (at most the server's ``max_batch``)."""
        queries = [pb.SessionQuery(id=i, state=pb.CheckStateRequest(state=joint_positions(q)))
                   for i, q in enumerate(states)]
        return [StateResult.from_proto(r) for r in self._answers(queries, "state")]

    def check_states(self, states: "np.ndarray | Sequence[Sequence[float]]") -> np.ndarray:
        """One bool per configuration (free and within the limits), in one round trip."""
        return np.array([r.free and r.within_limits for r in self.check_states_detailed(list(states))], dtype=bool)

    def check_motion(self, q0: Configuration, q1: Configuration, mode: str = "certified",
                     resolution: Optional[float] = None) -> MotionResult:
        """LINK(q0, q1), as :meth:`Client.check_motion`."""
        return self.check_motions([(q0, q1)], mode, resolution)[0]

    def check_motions(self, edges: Sequence[Tuple[Configuration, Configuration]], mode: str = "certified",
                      resolution: Optional[float] = None, until_invalid: bool = False) -> List[MotionResult]:
        """LINK for each (start, goal) edge, in one round trip. With ``until_invalid`` the answers stop
        after the first edge that is not free (a lazy planner's candidate path)."""
        m, res = _mode(mode), float(resolution or 0.0)
        queries = [pb.SessionQuery(id=i, motion=pb.CheckMotionRequest(start=joint_positions(a), goal=joint_positions(b),
                                                                      mode=m, resolution=res))
                   for i, (a, b) in enumerate(edges)]
        return [MotionResult.from_proto(r.result, r.stats) for r in self._answers(queries, "motion", until_invalid)]

    def distance(self, q: Configuration, rel_err: float = 0.0, abs_err: float = 0.0,
                 max_distance: Optional[float] = None, per_pair: bool = False) -> DistanceResult:
        """Clearance at ``q``, as :meth:`Client.distance`."""
        return self.distances([q], rel_err, abs_err, max_distance, per_pair)[0]

    def distances(self, states: Sequence[Configuration], rel_err: float = 0.0, abs_err: float = 0.0,
                  max_distance: Optional[float] = None, per_pair: bool = False) -> List[DistanceResult]:
        """Clearance at each configuration, in one round trip (a tracked trajectory: the server's caches
        carry from one state to the next)."""
        queries = [pb.SessionQuery(id=i, distance=pb.ComputeDistanceRequest(
            state=joint_positions(q), rel_err=float(rel_err), abs_err=float(abs_err),
            max_distance=float(max_distance or 0.0), per_pair=per_pair)) for i, q in enumerate(states)]
        return [DistanceResult.from_proto(r) for r in self._answers(queries, "distance")]

    def track(self, q: Configuration, horizon: float = DEFAULT_TRACK_HORIZON, max_pairs: int = DEFAULT_TRACK_PAIRS,
              per_link: bool = False, world: bool = True, self_pairs: bool = True, rel_err: float = 0.0,
              abs_err: float = 0.0, gradient: bool = True, *, convex: str = "vclip") -> TrackResult:
        """Clearance tracking at ``q`` (a controller's measured state), one round trip: the ``max_pairs``
        nearest robot-world (``world``) and robot-robot (``self_pairs``) pairs within ``horizon`` metres,
        overall or, with ``per_link``, per robot link, each with its certified interval, witness points,
        normal, closest features and, with ``gradient``, the gradient of its distance with respect to the
        joints. The session's tracker is warm-started from its previous track query (V-Clip from the last
        closest features, GJK from the last simplex, walks from the last closest triangles), so small
        steps are cheap and ``same_features`` tells which pairs kept theirs; answers are the same warm or
        cold. ``rel_err`` / ``abs_err`` budget the intervals of pairs with a non-convex mesh (convex pairs
        are exact); ``convex="gjk"`` decides convex polyhedra by GJK instead of V-Clip. A zero ``horizon``
        or ``max_pairs`` means the server's default (0.25 m, 8); at most 1e4 m and 4096.

        A bad argument raises :class:`~proximity_client.errors.InvalidArgumentError` naming the field
        (``queries[0].track.horizon: ...``) and the session goes on, its tracker unchanged."""
        request = track_request(q, horizon, max_pairs, per_link, world, self_pairs, rel_err, abs_err, gradient, convex)
        reported = request.horizon if request.horizon > 0 else DEFAULT_TRACK_HORIZON
        answer = self._answers([pb.SessionQuery(id=0, track=request)], "track")[0]
        return TrackResult.from_proto(answer, reported)

    def track_stream(self, configurations: Iterable[Configuration], **options: Any) -> Iterator[TrackResult]:
        """:meth:`track` at each configuration in turn (a trajectory, or a live source of measured states),
        one round trip each with the tracker warm from the last: yields one :class:`TrackResult` per
        configuration as it is answered. ``options`` are :meth:`track`'s."""
        for q in configurations:
            yield self.track(q, **options)


_CODES = {c.value[0]: c for c in grpc.StatusCode}


class _TrackSlot:
    """The session :meth:`Client.track` keeps for one scene; its lock makes calls on the scene take turns."""

    def __init__(self, scene: str) -> None:
        self.scene = scene
        self.lock = threading.Lock()
        self.session: Optional[Session] = None
        self.ended = False

    def track(self, client: "Client", q: Configuration, options: Dict[str, Any]) -> TrackResult:
        """One track query (the caller holds ``lock``): on the kept session, opened (again) when needed."""
        for attempt in range(2):
            fresh = self.session is None or self.session._closed
            if fresh:
                self.session = client.session(self.scene, timeout=client.TRACK_SESSION_SECONDS)
            assert self.session is not None
            try:
                return self.session.track(q, **options)
            except ProximityError as e:
                # A query's own error leaves the session open; a session that ended (its deadline, the
                # server's call limit, a drain) is opened again once, unless it was just opened.
                if not self.session._closed or fresh or attempt or e.code not in (
                        grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED, grpc.StatusCode.UNAVAILABLE):
                    raise
        raise AssertionError("unreachable")

    def end(self) -> None:
        """Closes the session (waiting for a call in flight on it); the slot is not used again."""
        with self.lock:
            self.ended = True
            if self.session is not None:
                self.session.close()
                self.session = None


class Client:
    """A connection to proximityd.

    Every method takes an optional ``timeout`` (seconds, the call's deadline; ``math.inf`` for none),
    defaulting to the client's, and raises :class:`~proximity_client.errors.ProximityError` (a subclass per
    gRPC status code) when the call fails. Query methods take ``scene``, defaulting to the client's
    ``scene`` (``"default"``: the built-in scene's alias).

    Scale-out (see :mod:`proximity_client.channel`): ``target`` may list several replicas or be a
    ``dns:///`` name that resolves to several; calls are then spread over them (round robin), and a call
    that fails UNAVAILABLE (a replica killed, restarting or draining) is retried on the others, with
    backoff, by gRPC's retry policy and then by the client (``retry``). The client keeps the request that
    made each scene it created (CreateScene or UpdateWorld). When a call names such a scene and the
    server answers NOT_FOUND (a replica that never saw it, or a restarted one), the client re-sends the
    scene and retries the call (``auto_restore=True``, see :meth:`restore_scene`). Scene ids are content
    hashes, so the re-sent scene gets the same id on any replica. ``unavailable_retries`` and
    ``scene_restores`` count what the client did.

    Args:
        target: gRPC target: ``"127.0.0.1:50051"``; several replicas as a list of IP addresses or one
            string with commas (``"127.0.0.1:50061,127.0.0.1:50062"``, also ``"ipv4:a:p,b:p"``); or a name
            resolving to several (``"dns:///proximityd.ns.svc.cluster.local:50051"``). A malformed target
            raises ValueError naming the bad entry.
        timeout: default deadline of every call, seconds (each retry has its own).
        options: extra gRPC channel options (``[(name, value), ...]``), appended after the defaults.
        max_message_bytes: send and receive limit (64 MiB by default, gRPC's is 4 MiB).
        batch_states: largest number of configurations per CheckStates request; bigger batches are sent
            in chunks (at most ``max_in_flight`` at a time). Default: what fits in ``max_message_bytes``
            with room to spare, at most 65,536.
        scene: the default scene id of query methods.
        round_robin: spread calls over every address the target resolves to (client-side balancing);
            default: on for several addresses and ``dns:`` names, off for one address.
        retry: how calls are retried after UNAVAILABLE (:class:`~proximity_client.channel.RetryPolicy`);
            None: never.
        auto_restore: re-send this client's own scenes to a server that answers NOT_FOUND for them.
        restore_rounds: how many times one call may re-send its scene and retry.
        restore_sends: how many CreateScene re-sends one restore may make (about the replica count).
        tls_ca: connect with TLS, trusting this CA (a PEM file path or PEM bytes; ``True``: the
            system's roots).
        tls_cert, tls_key: mutual TLS: this client's certificate chain and key (PEM file paths or bytes).
        token: a bearer token sent on every call (``authorization: Bearer <token>``), for a server started
            with ``--auth-token-file``.
    """

    def __init__(self, target: Target = DEFAULT_TARGET, timeout: float = 30.0,
                 options: Optional[Sequence[Tuple[str, Any]]] = None, *,
                 max_message_bytes: int = MAX_MESSAGE_BYTES, batch_states: Optional[int] = None,
                 max_in_flight: int = 2, scene: str = DEFAULT_SCENE, round_robin: Optional[bool] = None,
                 retry: Optional[RetryPolicy] = RetryPolicy(),
                 auto_restore: bool = True, restore_rounds: int = 3, restore_sends: int = 4,
                 tls_ca: Union[str, bytes, bool, None] = None, tls_cert: Union[str, bytes, None] = None,
                 tls_key: Union[str, bytes, None] = None, token: Optional[str] = None) -> None:
        if retry is not None and not isinstance(retry, RetryPolicy):
            raise ValueError(f"retry must be a RetryPolicy or None, not {retry!r}")
        resolved, several = resolve_target(target)
        opts: List[Tuple[str, Any]] = [
            ("grpc.max_send_message_length", int(max_message_bytes)),
            ("grpc.max_receive_message_length", int(max_message_bytes)),
        ]
        opts.extend(channel_options(several if round_robin is None else bool(round_robin), retry,
                                    int(max_message_bytes)))
        opts.extend(options or ())
        self.target = resolved
        self.retry = retry
        #: Whole calls the client repeated after UNAVAILABLE, and scenes it re-sent after NOT_FOUND.
        self.unavailable_retries = 0
        self.scene_restores = 0
        self.timeout = float(timeout)
        self.max_message_bytes = int(max_message_bytes)
        self.batch_states = batch_states
        self.max_in_flight = max(1, int(max_in_flight))
        self.scene = scene
        self.auto_restore = auto_restore
        self.restore_rounds = max(1, int(restore_rounds))
        self.restore_sends = max(1, int(restore_sends))
        if tls_ca is not None or tls_cert is not None or tls_key is not None:
            if (tls_cert is None) != (tls_key is None):
                raise ValueError("mutual TLS needs both tls_cert and tls_key")
            creds = grpc.ssl_channel_credentials(
                root_certificates=None if tls_ca in (None, True) else _pem(tls_ca),
                private_key=None if tls_key is None else _pem(tls_key),
                certificate_chain=None if tls_cert is None else _pem(tls_cert))
            self._channel = grpc.secure_channel(resolved, creds, options=opts)
        else:
            self._channel = grpc.insecure_channel(resolved, options=opts)
        if token:
            self._channel = grpc.intercept_channel(self._channel, _BearerToken(token))
        self._stub = pb_grpc.ProximityServiceStub(self._channel)
        self._health = health_pb_grpc.HealthStub(self._channel)
        # scene id -> ("create", CreateSceneRequest) or ("update", parent id, UpdateWorldRequest)
        self._recipes: Dict[str, Tuple[Any, ...]] = {}
        self._lock = threading.Lock()
        # scene -> the session track() keeps for it, least recently used first.
        self._track_slots: "collections.OrderedDict[str, _TrackSlot]" = collections.OrderedDict()

    # -- plumbing ----------------------------------------------------------------------------------

    def close(self) -> None:
        """Closes the sessions :meth:`track` keeps, then the channel."""
        with self._lock:
            kept = list(self._track_slots.values())
            self._track_slots.clear()
        for slot in kept:
            slot.end()
        self._channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _timeout(self, timeout: Optional[float]) -> Optional[float]:
        t = self.timeout if timeout is None or timeout is _UNSET else float(timeout)
        return None if math.isinf(t) else max(t, 0.0)

    def _unary(self, method: str, request: Any, timeout: Optional[float]) -> Any:
        try:
            response = getattr(self._stub, method)(request, timeout=self._timeout(timeout))
        except grpc.RpcError as e:
            raise from_rpc_error(e, method) from None
        # What the server accepted as MoveIt accepts it (a state's values for joints the scene lacks, ...):
        # one ProximityWarning each. Plan and GetIK carry theirs in their results and warn there.
        if method in _WARNING_METHODS:
            for w in response.warnings:
                warnings.warn(f"{method}: {w}", ProximityWarning, stacklevel=3)
        return response

    def _restoring(self, scene_id: str, fn: Callable[[], _T]) -> _T:
        """Runs ``fn``, riding through a replica's loss: when it fails NOT_FOUND for one of this client's
        scenes, re-sends the scene and retries (at most ``restore_rounds`` times: behind round-robin, the
        retry may reach yet another replica that lacks it); when it fails UNAVAILABLE after gRPC's own
        retries (or where gRPC could not retry: a stream already answering), repeats it after a backoff
        (at most ``retry.rounds`` times), as after a stream that an L7 proxy reset because the replica behind
        it died while answering. Queries are idempotent, so a repeat gives the same answer."""
        restores = rounds = 0
        while True:
            try:
                return fn()
            except ProximityError as e:
                if e.code == grpc.StatusCode.NOT_FOUND and self.auto_restore and restores < self.restore_rounds \
                        and self.owns_scene(scene_id):
                    restores += 1
                    self.restore_scene(scene_id)
                elif self._backed_off(e, rounds):
                    rounds += 1
                else:
                    raise

    def _backed_off(self, error: ProximityError, rounds: int) -> bool:
        """Whether ``error`` (after ``rounds`` repeats so far) is worth repeating: UNAVAILABLE, or a stream an
        L7 proxy reset, within ``retry.rounds``. If so, waits the backoff and counts the repeat."""
        if not (error.code == grpc.StatusCode.UNAVAILABLE or _reset_by_proxy(error)) or self.retry is None \
                or rounds >= self.retry.rounds:
            return False
        time.sleep(self.retry.backoff(rounds))
        with self._lock:
            self.unavailable_retries += 1
        return True

    def _scene(self, scene: Optional[str]) -> str:
        return self.scene if scene is None else scene

    # -- health ------------------------------------------------------------------------------------

    def health(self, service: str = "", timeout: Optional[float] = None) -> str:
        """grpc.health.v1 Check: ``"SERVING"``, ``"NOT_SERVING"``, ``"UNKNOWN"`` or ``"SERVICE_UNKNOWN"``."""
        try:
            r = self._health.Check(health_pb.HealthCheckRequest(service=service), timeout=self._timeout(timeout))
        except grpc.RpcError as e:
            raise from_rpc_error(e, "Health.Check") from None
        return health_pb.HealthCheckResponse.ServingStatus.Name(r.status)

    def wait_until_serving(self, timeout: float = 10.0, interval: float = 0.05) -> None:
        """Polls health until the server answers SERVING; raises UnavailableError after ``timeout`` s."""
        deadline = time.monotonic() + timeout
        last: Optional[str] = None
        while True:
            try:
                status = self.health(timeout=max(0.05, min(1.0, deadline - time.monotonic())))
                if status == "SERVING":
                    return
                last = status
            except ProximityError as e:
                last = str(e)
            if time.monotonic() >= deadline:
                raise error_for(grpc.StatusCode.UNAVAILABLE,
                                f"{self.target} not serving after {timeout:g} s (last: {last})", "Health.Check")
            time.sleep(interval)

    # -- scenes ------------------------------------------------------------------------------------

    def create_scene(self, urdf: Optional[str] = None, urdf_path: Optional[str] = None, *,
                     srdf: Optional[str] = None, srdf_path: Optional[str] = None,
                     package_dirs: Optional[Mapping[str, str]] = None, use_ros_package_path: bool = False,
                     base_pose: geometry.PoseLike = None, objects: Iterable["pb.CollisionObject"] = (),
                     attached: Iterable["pb.AttachedObject"] = (),
                     allowed_pairs: Iterable[Tuple[str, str]] = (),
                     padding: Union[float, Mapping[str, float], None] = None, default_padding: float = 0.0,
                     files: Optional[Mapping[str, bytes]] = None, collision_from_visual: bool = False,
                     name: Optional[str] = None, reassign_name: bool = False,
                     timeout: Optional[float] = None) -> SceneInfo:
        """Loads a scene: a robot (URDF text or a URDF path on the server, optional SRDF), its base pose,
        world objects, attached objects, allowed pairs and padding (metres; a number pads every link, a
        mapping pads the named links or attached objects). ``collision_from_visual`` makes each link
        collide with its ``<visual>`` geometry (links without one keep their ``<collision>``). ``name``
        gives the scene a name on the server, accepted wherever its id is (``AlreadyExistsError`` when
        another scene holds it, unless ``reassign_name`` moves it here).

        Returns the scene's info; its ``created`` is False when the same content was already loaded (the
        id is a content hash). Build objects with :mod:`proximity_client.geometry`.
        """
        robot = pb.RobotSource(urdf=urdf or "", urdf_path=urdf_path or "", srdf=srdf or "", srdf_path=srdf_path or "",
                               package_dirs=dict(package_dirs or {}), use_ros_package_path=use_ros_package_path,
                               files=dict(files or {}), collision_from_visual=collision_from_visual)
        req = pb.CreateSceneRequest(robot=robot, base_pose=geometry.as_pose(base_pose), objects=list(objects),
                                    attached_objects=list(attached),
                                    allowed_pairs=[pb.AllowedPair(first=a, second=b) for a, b in allowed_pairs],
                                    default_padding=float(default_padding), name=name or "",
                                    reassign_name=reassign_name)
        if isinstance(padding, Mapping):
            for k, v in padding.items():
                req.padding[str(k)] = float(v)
        elif padding is not None:
            req.default_padding = float(padding)
        return self.create_scene_from_request(req, timeout=timeout)

    def create_scene_from_files(self, urdf_file: str, srdf_file: Optional[str] = None, *,
                                package_dirs: Optional[Mapping[str, str]] = None, **kwargs: Any) -> SceneInfo:
        """Loads a scene from a robot's files on this machine: the URDF, the SRDF and every collision
        mesh the URDF names (visual ones too with ``collision_from_visual``) are read here and uploaded as one bundle (see :mod:`proximity_client.bundle`;
        ``package_dirs`` maps package names to local folders), so the server opens no file. The other
        arguments are :meth:`create_scene`'s. The same files give the same scene id as any other route."""
        from .bundle import robot_bundle
        b = robot_bundle(urdf_file, srdf_file, package_dirs,
                         collision_from_visual=bool(kwargs.get("collision_from_visual", False)))
        return self.create_scene(urdf=b.urdf, srdf=b.srdf or None, files=b.files, **kwargs)

    def create_scene_from_request(self, request: "pb.CreateSceneRequest",
                                  timeout: Optional[float] = None) -> SceneInfo:
        """Sends a prepared CreateSceneRequest and remembers it for :meth:`restore_scene`."""
        r = self._unary("CreateScene", request, timeout)
        info = SceneInfo.from_proto(r.scene, created=r.created)
        with self._lock:
            self._recipes[info.scene_id] = ("create", request)
        return info

    def name_scene(self, name: str, *, scene: Optional[str] = None, remove: bool = False, reassign: bool = False,
                   timeout: Optional[float] = None) -> SceneInfo:
        """Gives the scene (an id or a name) the name ``name``, or takes it away (``remove``). A name names
        one scene: ``AlreadyExistsError`` when another holds it, unless ``reassign`` moves it."""
        sid = self._scene(scene)
        req = pb.NameSceneRequest(scene_id=sid, name=name, remove=remove, reassign=reassign)
        return SceneInfo.from_proto(self._unary("NameScene", req, timeout).scene)

    def get_scene(self, scene: Optional[str] = None, timeout: Optional[float] = None) -> SceneInfo:
        """The scene's info: robot, joint order and limits, links, objects, named states."""
        sid = self._scene(scene)
        return self._restoring(sid, lambda: SceneInfo.from_proto(
            self._unary("GetScene", pb.GetSceneRequest(scene_id=sid), timeout).scene))

    def wait_until_self_clearance_filled(self, scene: Optional[str] = None, timeout: float = 120.0,
                                         interval: float = 0.05) -> SceneInfo:
        """Polls the scene until its self-clearance maps are filled (they fill in the background after a
        build; answers are exact either way, faster once filled): a warm-up before timing or load.
        Raises DeadlineExceededError after ``timeout`` s."""
        deadline = time.monotonic() + timeout
        while True:
            info = self.get_scene(scene, timeout=max(0.05, min(10.0, deadline - time.monotonic())))
            if info.self_clearance_filled:
                return info
            if time.monotonic() >= deadline:
                raise error_for(grpc.StatusCode.DEADLINE_EXCEEDED,
                                f"scene {info.label}: self-clearance maps not filled after {timeout:g} s", "GetScene")
            time.sleep(interval)

    def list_scenes(self, timeout: Optional[float] = None) -> List[SceneInfo]:
        """Every scene loaded on the server that answers (in id order, fetched a page at a time)."""
        scenes: List[SceneInfo] = []
        token = ""
        while True:
            r = self._unary("ListScenes", pb.ListScenesRequest(page_token=token), timeout)
            scenes.extend(SceneInfo.from_proto(s) for s in r.scenes)
            token = r.next_page_token
            if not token:
                return scenes

    def update_world(self, add: Iterable["pb.CollisionObject"] = (),
                     move: Union[Mapping[str, geometry.PoseLike], Iterable[Tuple[str, geometry.PoseLike]]] = (),
                     remove: Iterable[str] = (), *, replace: Iterable["pb.CollisionObject"] = (),
                     scene: Optional[str] = None, move_names: bool = False,
                     timeout: Optional[float] = None) -> SceneInfo:
        """Adds, moves (id -> new pose of the object frame), replaces (new parts and pose for an id, or a
        new object: a sensor's point cloud refreshed each frame) or removes world objects.

        The result is a new scene (new id, version + 1); the old one stays loaded. Names stay on the
        version they were given to, unless ``move_names``: then the scene's names move to the new version
        (a name keeps naming the newest world, as a branch follows its commits).
        """
        sid = self._scene(scene)
        objs: List[pb.CollisionObject] = []
        for o in add:
            c = pb.CollisionObject()
            c.CopyFrom(o)
            c.operation = pb.CollisionObject.OPERATION_ADD
            objs.append(c)
        for o in replace:
            c = pb.CollisionObject()
            c.CopyFrom(o)
            c.operation = pb.CollisionObject.OPERATION_REPLACE
            objs.append(c)
        moves = move.items() if isinstance(move, Mapping) else move
        for oid, p in moves:
            objs.append(pb.CollisionObject(id=oid, pose=geometry.as_pose(p), operation=pb.CollisionObject.OPERATION_MOVE))
        for oid in remove:
            objs.append(pb.CollisionObject(id=oid, operation=pb.CollisionObject.OPERATION_REMOVE))
        req = pb.UpdateWorldRequest(scene_id=sid, objects=objs, move_names=bool(move_names))
        info = self._restoring(sid, lambda: SceneInfo.from_proto(self._unary("UpdateWorld", req, timeout).scene))
        with self._lock:
            self._recipes[info.scene_id] = ("update", sid, req)
        return info

    def delete_scene(self, scene: str, timeout: Optional[float] = None) -> None:
        """Unloads a scene (and forgets it: it will not be restored)."""
        self._unary("DeleteScene", pb.DeleteSceneRequest(scene_id=scene), timeout)
        with self._lock:
            self._recipes.pop(scene, None)

    def owns_scene(self, scene_id: str) -> bool:
        """Whether this client created ``scene_id`` (and so can re-send it)."""
        with self._lock:
            return scene_id in self._recipes

    def restore_scene(self, scene_id: str, timeout: Optional[float] = None) -> SceneInfo:
        """Re-sends the request(s) that made one of this client's scenes (its CreateScene, or its parent
        chain and UpdateWorld), as after a NOT_FOUND from a replica that never saw it or restarted.

        A CreateScene is repeated until a server answers that it newly loaded the scene (at most
        ``restore_sends`` times), so that behind round-robin the replica that lacked it gets it even
        when the first re-send lands on one that has it. Raises NotFoundError when the client did not
        create ``scene_id``, and FailedPreconditionError when the server gives the re-sent content a
        different id.
        """
        with self._lock:
            recipe = self._recipes.get(scene_id)
        if recipe is None:
            raise error_for(grpc.StatusCode.NOT_FOUND, f"scene {scene_id!r} was not created by this client",
                            "restore_scene")
        with self._lock:
            self.scene_restores += 1
        if recipe[0] == "create":
            for _ in range(self.restore_sends):
                r = self._unary("CreateScene", recipe[1], timeout)
                if r.created:
                    break
            info = SceneInfo.from_proto(r.scene, created=r.created)
        else:
            _, parent, req = recipe
            for attempt in range(self.restore_sends + 1):
                try:
                    info = SceneInfo.from_proto(self._unary("UpdateWorld", req, timeout).scene)
                    break
                except ProximityError as e:
                    if e.code != grpc.StatusCode.NOT_FOUND or not self.owns_scene(parent) or \
                            attempt == self.restore_sends:
                        raise
                self.restore_scene(parent, timeout)
        if info.scene_id != scene_id:
            raise error_for(grpc.StatusCode.FAILED_PRECONDITION,
                            f"re-sent scene got id {info.scene_id!r}, expected {scene_id!r}", "restore_scene")
        return info

    # -- queries -----------------------------------------------------------------------------------

    def session(self, scene: Optional[str] = None, timeout: Optional[float] = 300.0, *,
                cold_caches: bool = False) -> Session:
        """A query :class:`Session` on ``scene``: many small queries (a planner's states and edges, a tracked
        trajectory's distances) at one round trip each on an open stream instead of a call each.
        ``timeout`` is the deadline of the whole session, seconds (``None`` or ``math.inf``: none; the
        server also ends it at its ``--max-call-seconds``, 300 s by default). ``cold_caches`` starts every
        query from empty server caches (for measurement). Unary methods stay the way for one-off calls."""
        t = None if timeout is None or math.isinf(timeout) else max(float(timeout), 0.0)
        return Session(self, self._scene(scene), t, cold_caches)

    #: Deadline (seconds) of each session :meth:`track` opens; the next call after it opens another.
    TRACK_SESSION_SECONDS = 300.0
    #: Scenes :meth:`track` keeps a session for at once (each holds a stream, and a server thread, open);
    #: a call on one more closes the least recently tracked scene's.
    TRACK_SESSIONS = 4

    def track(self, q: Configuration, *, scene: Optional[str] = None, **options: Any) -> TrackResult:
        """Clearance tracking at ``q`` (:meth:`Session.track`, whose ``options`` it takes) on a session the
        client keeps for ``scene``: consecutive calls on one scene share that session's tracker, so they
        are warm (``same_features`` along small steps). The session is opened at the first call and kept
        until :meth:`end_track` or :meth:`close` (or until ``TRACK_SESSIONS`` other scenes were tracked
        since); it is opened again (its first frame cold, the answers the same) when it ended: its
        deadline (``TRACK_SESSION_SECONDS``), the server's ``--max-call-seconds``, a lost server.
        Thread-safe: calls on one scene take turns. Errors as :meth:`Session.track`'s."""
        sid = self._scene(scene)
        while True:
            evicted: List[_TrackSlot] = []
            with self._lock:
                slot = self._track_slots.get(sid)
                if slot is None:
                    slot = self._track_slots[sid] = _TrackSlot(sid)
                    while len(self._track_slots) > max(1, int(self.TRACK_SESSIONS)):
                        evicted.append(self._track_slots.popitem(last=False)[1])
                else:
                    self._track_slots.move_to_end(sid)
            for old in evicted:
                old.end()
            with slot.lock:
                if slot.ended:
                    continue  # ended while this call waited for it: take the scene's new slot
                return slot.track(self, q, options)

    def end_track(self, scene: Optional[str] = None) -> None:
        """Closes the session :meth:`track` keeps for ``scene`` (its next call opens another); nothing when
        there is none. A caller that moves on to another scene version ends the old one's."""
        sid = self._scene(scene)
        with self._lock:
            slot = self._track_slots.pop(sid, None)
        if slot is not None:
            slot.end()

    def check_state(self, q: Configuration, *, scene: Optional[str] = None,
                    timeout: Optional[float] = None) -> StateResult:
        """CLEAR(q): whether configuration ``q`` is free of world and self collision."""
        sid = self._scene(scene)
        req = pb.CheckStateRequest(scene_id=sid, state=joint_positions(q))
        return self._restoring(sid, lambda: StateResult.from_proto(self._unary("CheckState", req, timeout)))

    @overload
    def check_states(self, states: "np.ndarray | Sequence[Sequence[float]]",
                     joint_names: Optional[Sequence[str]] = ..., include_contacts: Literal[False] = ..., *,
                     scene: Optional[str] = ..., encoding: str = ..., batch_size: Optional[int] = ...,
                     timeout: Optional[float] = ...) -> np.ndarray: ...

    @overload
    def check_states(self, states: "np.ndarray | Sequence[Sequence[float]]",
                     joint_names: Optional[Sequence[str]] = ..., include_contacts: Literal[True] = ..., *,
                     scene: Optional[str] = ..., encoding: str = ..., batch_size: Optional[int] = ...,
                     timeout: Optional[float] = ...) -> StatesResult: ...

    def check_states(self, states: "np.ndarray | Sequence[Sequence[float]]",
                     joint_names: Optional[Sequence[str]] = None, include_contacts: bool = False, *,
                     scene: Optional[str] = None, encoding: str = "packed", batch_size: Optional[int] = None,
                     timeout: Optional[float] = None) -> Union[np.ndarray, StatesResult]:
        """CLEAR over a batch: ``states`` has shape (n, dof), columns in the scene's joint order or in
        ``joint_names`` order.

        Returns a bool array of shape (n,) (True = free), or with ``include_contacts`` a
        :class:`StatesResult` that also holds ``within_limits`` and the first contact of each colliding
        row. Batches above ``batch_size`` rows (default: the client's ``batch_states``) go in several
        requests, each below the message limit; ``timeout`` bounds the whole call.
        """
        sid = self._scene(scene)
        return self._restoring(sid, lambda: self._check_states(sid, states, joint_names, include_contacts,
                                                               encoding, batch_size, timeout))

    def _chunk_rows(self, cols: int, batch_size: Optional[int]) -> int:
        if batch_size is not None:
            return max(1, int(batch_size))
        if self.batch_states is not None:
            return max(1, int(self.batch_states))
        fit = (self.max_message_bytes - (1 << 20)) // max(1, 16 * cols)  # room for the repeated encoding
        return int(max(1, min(65536, fit)))

    def _check_states(self, sid: str, states: Any, joint_names: Optional[Sequence[str]], include_contacts: bool,
                      encoding: str, batch_size: Optional[int], timeout: Optional[float]) -> Any:
        arr = np.asarray(states, dtype=np.float64)
        if arr.ndim == 1:
            arr = arr.reshape(1, -1) if arr.size else arr.reshape(0, 0)
        if arr.ndim != 2:
            raise ValueError(f"states must have shape (n, dof), got {arr.shape}")
        n = arr.shape[0]
        free = np.zeros(n, dtype=bool)
        within = np.zeros(n, dtype=bool)
        contacts: Dict[int, Pair] = {}
        stats = WorkStats()
        t = self._timeout(timeout)
        deadline = None if t is None else time.monotonic() + t
        rows = self._chunk_rows(arr.shape[1], batch_size)
        pending: Deque[Tuple[int, int, Any]] = deque()

        def collect(start: int, stop: int, fut: Any) -> None:
            nonlocal stats
            try:
                r = fut.result()
            except grpc.RpcError as e:
                raise from_rpc_error(e, "CheckStates") from None
            got = len(r.free)
            if got != stop - start:
                raise InvalidArgumentError(
                    grpc.StatusCode.INVALID_ARGUMENT,
                    f"sent {stop - start} rows of {arr.shape[1]} values, the server answered {got}: the row "
                    "length does not match the scene's joint count", "CheckStates")
            free[start:stop] = np.fromiter(r.free, dtype=bool, count=got)
            if len(r.within_limits) == got:
                within[start:stop] = np.fromiter(r.within_limits, dtype=bool, count=got)
            for c in r.contacts:
                contacts[start + c.index] = Pair.from_proto(c.contact)
            stats = stats + WorkStats.from_proto(r.stats)

        starts = list(range(0, n, rows)) or [0]
        try:
            for start in starts:
                stop = min(n, start + rows)
                while len(pending) >= self.max_in_flight:
                    collect(*pending.popleft())
                req = pb.CheckStatesRequest(scene_id=sid, states=configurations(arr[start:stop], joint_names, encoding),
                                            include_contacts=include_contacts)
                remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
                pending.append((start, stop, self._stub.CheckStates.future(req, timeout=remaining)))
            while pending:
                collect(*pending.popleft())
        finally:
            for _, _, fut in pending:
                fut.cancel()
        if include_contacts:
            return StatesResult(free, within, contacts, stats)
        return free

    def distance(self, q: Configuration, rel_err: float = 0.0, abs_err: float = 0.0,
                 max_distance: Optional[float] = None, per_pair: bool = False, *, exclude_world: bool = False,
                 exclude_self: bool = False, scene: Optional[str] = None,
                 timeout: Optional[float] = None) -> DistanceResult:
        """Clearance at ``q`` as a certified interval [lower, upper] (metres) with the witness pair and
        points, within the relative and absolute error budgets. ``max_distance`` lets the server stop once
        it proves the clearance is at least that."""
        sid = self._scene(scene)
        req = pb.ComputeDistanceRequest(scene_id=sid, state=joint_positions(q), rel_err=float(rel_err),
                                        abs_err=float(abs_err), max_distance=float(max_distance or 0.0),
                                        per_pair=per_pair, exclude_world=exclude_world, exclude_self=exclude_self)
        return self._restoring(sid, lambda: DistanceResult.from_proto(self._unary("ComputeDistance", req, timeout)))

    def check_motion(self, q0: Configuration, q1: Configuration, mode: str = "certified",
                     resolution: Optional[float] = None, *, scene: Optional[str] = None,
                     timeout: Optional[float] = None) -> MotionResult:
        """LINK(q0, q1) for the straight joint-space segment: ``"certified"`` (never free when any
        configuration on it collides) or ``"discrete"`` (states at most ``resolution`` apart, like OMPL's
        DiscreteMotionValidator; default 0.01)."""
        sid = self._scene(scene)
        req = pb.CheckMotionRequest(scene_id=sid, start=joint_positions(q0), goal=joint_positions(q1), mode=_mode(mode),
                                    resolution=float(resolution or 0.0))

        def call() -> MotionResult:
            r = self._unary("CheckMotion", req, timeout)
            return MotionResult.from_proto(r.result, r.stats)
        return self._restoring(sid, call)

    def check_path(self, waypoints: PathLike, joint_names: Optional[Sequence[str]] = None, mode: str = "certified",
                   resolution: Optional[float] = None, *, scene: Optional[str] = None,
                   timeout: Optional[float] = None) -> PathResult:
        """Checks the polyline through ``waypoints`` ((n, dof), n >= 1): the first segment that is not free."""
        sid = self._scene(scene)
        arr, names = _path_parts(waypoints, joint_names)
        req = pb.CheckPathRequest(scene_id=sid, waypoints=configurations(arr, names), mode=_mode(mode),
                                  resolution=float(resolution or 0.0))

        def call() -> PathResult:
            r = self._unary("CheckPath", req, timeout)
            return PathResult.from_proto(r.result, r.stats)
        return self._restoring(sid, call)

    def stream_paths(self, paths: Sequence[PathLike], joint_names: Optional[Sequence[str]] = None,
                     mode: str = "certified", resolution: Optional[float] = None, *, scene: Optional[str] = None,
                     timeout: Optional[float] = None) -> PathStream:
        """Starts a ValidatePaths call and returns its result stream (results in completion order)."""
        sid = self._scene(scene)
        confs = []
        for p in paths:
            arr, names = _path_parts(p, joint_names)
            confs.append(configurations(arr, names))
        req = pb.ValidatePathsRequest(scene_id=sid, paths=confs, mode=_mode(mode), resolution=float(resolution or 0.0))
        return PathStream(self._stub.ValidatePaths(req, timeout=self._timeout(timeout)), len(confs))

    def validate_paths(self, paths: Sequence[PathLike], joint_names: Optional[Sequence[str]] = None,
                       mode: str = "certified", resolution: Optional[float] = None,
                       progress: Union[bool, str] = True, *,
                       scene: Optional[str] = None, timeout: Optional[float] = None,
                       on_result: Optional[Callable[[int, PathResult], None]] = None) -> List[PathResult]:
        """Validates many paths in one server-streaming call and returns their results in request order.

        ``progress`` shows a tqdm bar on stderr when stderr is a terminal (``"always"``: in any case; needs
        tqdm).
        ``on_result(index, result)`` is called as each result arrives.
        """
        sid = self._scene(scene)
        paths = list(paths)

        def run() -> List[PathResult]:
            stream = self.stream_paths(paths, joint_names, mode, resolution, scene=sid, timeout=timeout)
            results: List[Optional[PathResult]] = [None] * len(paths)
            bar = _progress_bar(len(paths), progress, "paths")
            try:
                for index, result in stream:
                    if not 0 <= index < len(paths) or results[index] is not None:
                        raise error_for(grpc.StatusCode.INTERNAL, f"the server sent a bad path index {index}",
                                        "ValidatePaths")
                    results[index] = result
                    if bar is not None:
                        bar.update(1)
                    if on_result is not None:
                        on_result(index, result)
            except BaseException:
                stream.cancel()
                raise
            finally:
                if bar is not None:
                    bar.close()
            missing = [i for i, r in enumerate(results) if r is None]
            if missing:
                raise error_for(grpc.StatusCode.INTERNAL,
                                f"the stream ended without results for {len(missing)} paths (first {missing[0]})",
                                "ValidatePaths")
            return results  # type: ignore[return-value]
        return self._restoring(sid, run)

    def plan(self, start: Configuration, goal: Optional[Configuration] = None, planner: str = "rrt_connect",
             time_limit: float = 5.0, seed: int = 1, simplify: bool = True, mode: str = "certified",
             resolution: Optional[float] = None, range: Optional[float] = None,  # noqa: A002 - OMPL's name
             max_iterations: Optional[int] = None, *, group: Optional[str] = None,
             goal_pose: Optional["pb.PoseGoal"] = None, joint_limits: Optional[Mapping[str, Mapping[str, float]]] = None,
             default_acceleration: Optional[float] = None, velocity_scaling: Optional[float] = None,
             acceleration_scaling: Optional[float] = None, resample_dt: Optional[float] = None,
             path_tolerance: Optional[float] = None,
             scene: Optional[str] = None, timeout: Optional[float] = None) -> PlanResult:
        """A collision-free joint-space path from ``start`` to ``goal`` (each a configuration in any form
        :meth:`check_state` takes), found by a sampling-based planner on the server.

        ``planner``: ``"rrt_connect"`` (default), ``"rrt"``, ``"prm"`` or ``"lazy_prm"``. ``time_limit``:
        seconds of planning (at most the server's ``--max-plan-seconds``). ``seed``: the same request and seed
        give the same path. ``simplify``: shortcut the raw path. ``mode`` / ``resolution``: how each edge is
        checked, ``"certified"`` (default; the path is then certified free) or ``"discrete"``. ``range``:
        longest tree extension (rad / m; default 0.2 of the space's diagonal). ``max_iterations``: a sample
        budget. ``group``: an SRDF group whose joints alone move; the others stay at the start's values (the
        goal must share them).

        ``goal_pose`` (a :func:`proximity_client.geometry.pose_goal`) instead of ``goal``: plan to any
        collision-free configuration that puts the link at the pose (MoveIt's pose goals). The server draws
        inverse-kinematics solutions while it searches; the path's last waypoint is one of them.

        Time-optimal timing (``result.trajectory``, a :class:`TimedTrajectory`) when any of ``joint_limits``
        (``{joint: {"max_velocity": v, "max_acceleration": a}}``, e.g.
        :func:`proximity_client.kinematics.read_joint_limits` of MoveIt's joint_limits.yaml),
        ``default_acceleration`` (for joints given none), ``velocity_scaling`` / ``acceleration_scaling``
        (MoveIt's scaling factors, in (0, 1]), ``resample_dt`` (seconds between samples, default 0.01) or
        ``path_tolerance`` is given: every segment as fast as the limits allow (velocities from the URDF unless
        given). Without ``path_tolerance`` the certified path is followed exactly, stopping at each waypoint;
        with it (rad / m, MoveIt's path_tolerance) a corner may be passed without stopping on a circular
        blend within that distance of it, each blend checked as the path is (certified by default) and a
        corner whose blend is not free passed at rest. Every joint that may move needs both limits.

        Accepted as MoveIt accepts it, with a :class:`ProximityWarning` each (also in the result's
        ``warnings``): values for joints the scene lacks (ignored), start values within 0.05 and goal values
        within 1e-4 (rad or m) outside a joint limit (clamped to it; further out raises). Continuous joints:
        the path's last waypoint is the goal exactly as given; each segment turns them the short way.

        Not finding a path is an answer: the result's ``outcome`` says why (``"timeout"``,
        ``"invalid_start"``, ...) and ``solved`` is False. ``timeout`` (the call's deadline) defaults to the
        client's, but at least ``time_limit`` + 5 s; a deadline that passes first stops the planner and
        raises :class:`~proximity_client.errors.DeadlineExceededError`.
        """
        sid = self._scene(scene)
        if (goal is None) == (goal_pose is None):
            raise ValueError("plan: give goal (a configuration) or goal_pose (a pose_goal), one of them")
        ends: Dict[str, Any] = {"goal_pose": goal_pose} if goal_pose is not None else {"goal": joint_positions(goal)}
        if any(x is not None for x in (joint_limits, default_acceleration, velocity_scaling, acceleration_scaling,
                                       resample_dt, path_tolerance)):
            ends["timing"] = pb.TimingRequest(
                limits=[pb.JointTimingLimit(joint_name=str(n), max_velocity=float(l.get("max_velocity", 0.0)),
                                            max_acceleration=float(l.get("max_acceleration", 0.0)))
                        for n, l in (joint_limits or {}).items()],
                default_acceleration=float(default_acceleration or 0.0),
                velocity_scaling=float(velocity_scaling or 0.0), acceleration_scaling=float(acceleration_scaling or 0.0),
                resample_dt=float(resample_dt or 0.0), path_tolerance=float(path_tolerance or 0.0))
        req = pb.PlanRequest(scene_id=sid, planner=_planner(planner), start=joint_positions(start), **ends,
                             time_limit=float(time_limit), seed=int(seed),
                             range=float(range or 0.0), simplify=bool(simplify), mode=_mode(mode),
                             resolution=float(resolution or 0.0), max_iterations=int(max_iterations or 0),
                             group=group or "")
        if timeout is None:
            limit = float(time_limit) if math.isfinite(float(time_limit)) else 0.0
            timeout = max(self.timeout, limit + 5.0)
        result = self._restoring(sid, lambda: PlanResult.from_proto(self._unary("Plan", req, timeout)))
        for w in result.warnings:
            warnings.warn(f"plan: {w}", ProximityWarning, stacklevel=2)
        return result

    def time_of_first_contact(self, q0: Configuration, q1: Configuration, tolerance: Optional[float] = None, *,
                              scene: Optional[str] = None, timeout: Optional[float] = None) -> ContactResult:
        """Time of first contact along the joint-space segment q0 -> q1 (conservative advancement):
        [0, t_contact) is certified contact-free. ``tolerance`` (metres) is the clearance at which contact
        is declared (server default 1e-5)."""
        sid = self._scene(scene)
        req = pb.TimeOfFirstContactRequest(scene_id=sid, joint_motion=pb.JointMotion(
            start=joint_positions(q0), goal=joint_positions(q1)), tolerance=float(tolerance or 0.0))
        return self._restoring(sid, lambda: ContactResult.from_proto(self._unary("TimeOfFirstContact", req, timeout)))

    def body_time_of_first_contact(self, parts: Iterable["pb.ObjectPart"], start: geometry.PoseLike,
                                   goal: geometry.PoseLike, tolerance: Optional[float] = None, *,
                                   scene: Optional[str] = None, timeout: Optional[float] = None) -> ContactResult:
        """Time of first contact of a free-flying rigid body (``parts`` in its frame) moving from pose
        ``start`` to ``goal`` (linear translation, slerp rotation) against the scene's world objects."""
        sid = self._scene(scene)
        req = pb.TimeOfFirstContactRequest(scene_id=sid, body_motion=pb.BodyMotion(
            parts=list(parts), start=geometry.as_pose(start), goal=geometry.as_pose(goal)),
            tolerance=float(tolerance or 0.0))
        return self._restoring(sid, lambda: ContactResult.from_proto(self._unary("TimeOfFirstContact", req, timeout)))

    # -- kinematics and geometry ---------------------------------------------------------------------

    def link_poses(self, states: Union[Configuration, np.ndarray, Sequence[Sequence[float]]],
                   joint_names: Optional[Sequence[str]] = None, *, scene: Optional[str] = None,
                   timeout: Optional[float] = None) -> LinkPoses:
        """Every link's pose in the world (forward kinematics, the scene's base pose applied) at one
        configuration (any form :meth:`check_state` takes) or a batch of shape (n, dof) (columns in the scene's
        joint order or in ``joint_names`` order; at most the server's ``--max-batch-states``).

        Returns :class:`LinkPoses` with ``poses`` of shape (n, links, 7): ``[x, y, z, qx, qy, qz, qw]`` per
        link, links in the scene's link order (``link_names``); n is 1 for a single configuration.
        """
        sid = self._scene(scene)
        if isinstance(states, (str, Mapping)) or np.asarray(states, dtype=np.float64).ndim <= 1:
            req = pb.GetLinkPosesRequest(scene_id=sid, state=joint_positions(states))  # type: ignore[arg-type]
        else:
            req = pb.GetLinkPosesRequest(scene_id=sid, states=configurations(states, joint_names))
        return self._restoring(sid, lambda: LinkPoses.from_proto(self._unary("GetLinkPoses", req, timeout)))

    def ik(self, goal: "pb.PoseGoal", seed_state: Optional[Configuration] = None, *, group: Optional[str] = None,
           avoid_collisions: bool = True, search_time: float = 0.0, random_seed: int = 0,
           scene: Optional[str] = None, timeout: Optional[float] = None) -> IkResult:
        """Inverse kinematics (MoveIt's GetPositionIK): joint values that put ``goal``'s link at its pose
        (``goal`` from :func:`proximity_client.geometry.pose_goal`), within the joint limits and, with
        ``avoid_collisions`` (default), free of world and self contact. ``seed_state``: where the first descent
        starts and the values of the joints that do not move (default the scene's default configuration).
        ``group``: only the SRDF group's joints move. ``search_time``: seconds of random restarts (0: 1 s, at
        most the server's ``--max-plan-seconds``); ``random_seed``: the same request and seed give the same
        answer. Finding none is an answer: ``found`` False and ``message`` says why."""
        sid = self._scene(scene)
        req = pb.GetIKRequest(scene_id=sid, goal=goal, group=group or "", avoid_collisions=bool(avoid_collisions),
                              timeout=float(search_time), random_seed=int(random_seed))
        if seed_state is not None:
            req.seed.CopyFrom(joint_positions(seed_state))
        if timeout is None:
            timeout = max(self.timeout, float(search_time or 1.0) + 5.0)
        result = self._restoring(sid, lambda: IkResult.from_proto(self._unary("GetIK", req, timeout)))
        for w in result.warnings:
            warnings.warn(f"ik: {w}", ProximityWarning, stacklevel=2)
        return result

    def scene_geometry(self, max_triangles: int = 0, *, scene: Optional[str] = None,
                       timeout: Optional[float] = None) -> SceneGeometry:
        """The scene's geometry as triangle meshes: every link's parts in the link frame, world objects in the
        world, attached objects in their link's frame (primitives tessellated for display). At most
        ``max_triangles`` triangles (0: the server's cap): the largest meshes are sent as their convex hulls
        until the rest fits (``SceneGeometry.hull_parts``)."""
        sid = self._scene(scene)
        req = pb.GetSceneGeometryRequest(scene_id=sid, max_triangles=int(max_triangles))
        return self._restoring(sid, lambda: SceneGeometry.from_proto(self._unary("GetSceneGeometry", req, timeout)))

    # -- contacts ------------------------------------------------------------------------------------

    def contacts(self, q: Configuration, *, max_pairs: int = 0, max_points: int = 0, exclude_world: bool = False,
                 exclude_self: bool = False, scene: Optional[str] = None,
                 timeout: Optional[float] = None) -> ContactsResult:
        """Every colliding pair at ``q`` (world and self, as :meth:`check_state` decides collision) with its
        penetration depth, normal and contact points, deepest first. ``max_pairs`` caps the geometry pairs
        measured (0: 256, at most 4096; ``truncated`` tells when more collide), ``max_points`` the points
        per pair (0: 8)."""
        sid = self._scene(scene)
        req = pb.ComputeContactsRequest(scene_id=sid, state=joint_positions(q), max_pairs=int(max_pairs),
                                        max_points=int(max_points), exclude_world=exclude_world,
                                        exclude_self=exclude_self)
        return self._restoring(sid, lambda: ContactsResult.from_proto(self._unary("ComputeContacts", req, timeout)))

    def signed_distance(self, first: str, second: str, q: Configuration, rel_err: float = 0.0,
                        abs_err: float = 0.0, *, scene: Optional[str] = None,
                        timeout: Optional[float] = None) -> SignedDistance:
        """Signed distance (metres, negative inside) between two named things at ``q``: links, attached
        objects or world objects, at least one on the robot. Pairs apart get a certified interval within
        ``rel_err`` / ``abs_err``; colliding ones minus their penetration depth."""
        sid = self._scene(scene)
        req = pb.ComputeSignedDistanceRequest(scene_id=sid, state=joint_positions(q), first=first, second=second,
                                              rel_err=float(rel_err), abs_err=float(abs_err))
        return self._restoring(sid, lambda: SignedDistance.from_proto(
            self._unary("ComputeSignedDistance", req, timeout)))


def _progress_bar(total: int, enabled: Union[bool, str], unit: str) -> Any:
    """A tqdm bar on stderr, or None: ``enabled`` True shows it when stderr is a terminal, ``"always"``
    shows it anyway; None also when tqdm is not installed."""
    if not enabled or (enabled != "always" and not sys.stderr.isatty()):
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    tty = sys.stderr.isatty()
    # Off a terminal ("always"), fewer redraws keep logs readable.
    return tqdm(total=total, unit=unit, file=sys.stderr, leave=enabled == "always", dynamic_ncols=tty,
                mininterval=0.1 if tty else 1.0)


__all__ = ["Client", "PathStream", "Configuration", "PathLike", "joint_positions", "configurations", "track_request",
           "DEFAULT_TARGET", "DEFAULT_SCENE", "MAX_MESSAGE_BYTES", "DEFAULT_TRACK_HORIZON", "DEFAULT_TRACK_PAIRS"]
