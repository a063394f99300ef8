"""Where a client connects and how it rides through a replica's loss: targets, balancing and retries.

A target is one address (``"127.0.0.1:50051"``, ``"localhost:50051"``), several (a list, or one string
with commas: ``"127.0.0.1:50061,127.0.0.1:50062"``, also gRPC's own ``"ipv4:a:p,b:p"`` and
``"ipv6:[a]:p,[b]:p"``), or a name that resolves to several (``"dns:///proximityd.ns.svc.cluster.local:50051"``,
a Kubernetes headless Service). Several addresses or a ``dns:`` name get gRPC's ``round_robin`` policy:
calls spread over every replica, and a replica that goes away is left out until it comes back.

Retries (:class:`RetryPolicy`) work at two levels. gRPC's own retry policy (the service config's
``retryPolicy``) re-sends a call that failed UNAVAILABLE before the server answered anything, with
exponential backoff, to another replica where there is one; every ProximityService method but
DeleteScene is listed: queries are idempotent (the same request gives the same answer on any replica),
and CreateScene and UpdateWorld are too (scene ids are content hashes: a repeat finds the scene made).
DeleteScene is left out: a repeat after a lost answer would report NOT_FOUND for a scene it deleted.
Calls that gRPC cannot retry (the server had started answering, e.g. a result stream cut off by the
replica's death) are repeated whole by the client, ``rounds`` times at most.
"""
from __future__ import annotations

import ipaddress
import json
import math
from dataclasses import dataclass
from typing import Any, List, Optional, Sequence, Tuple, Union

#: The gRPC service whose methods the retry policy names.
SERVICE = "proximity.v1.ProximityService"
#: Methods safe to send again after UNAVAILABLE (all but DeleteScene, see the module's note).
RETRYABLE_METHODS = ("CreateScene", "GetScene", "ListScenes", "UpdateWorld", "CheckState", "CheckStates",
                     "ComputeDistance", "CheckMotion", "CheckPath", "ValidatePaths", "TimeOfFirstContact", "Plan",
                     "GetLinkPoses", "GetSceneGeometry")
#: gRPC caps a retry policy's maxAttempts at 5 (more is silently lowered).
MAX_GRPC_ATTEMPTS = 5

Target = Union[str, Sequence[str]]


@dataclass(frozen=True)
class RetryPolicy:
    """How calls are retried after UNAVAILABLE (a replica stopped, restarted or is draining).

    Attributes:
        max_attempts: attempts per call by gRPC's retry policy, the first included (2 to 5).
        initial_backoff: seconds before the first retry (> 0); gRPC draws each wait at random up to the
            current backoff.
        max_backoff: longest backoff, seconds (>= initial_backoff).
        backoff_multiplier: growth of the backoff per retry (>= 1).
        rounds: whole-call repeats by the client after gRPC's attempts (>= 0), for calls gRPC cannot retry
            (a stream the server had started answering). Each round waits its backoff first.
    """

    max_attempts: int = 5
    initial_backoff: float = 0.05
    max_backoff: float = 2.0
    backoff_multiplier: float = 2.0
    rounds: int = 3

    def __post_init__(self) -> None:
        def finite(name: str, v: Any) -> float:
            try:
                f = float(v)
            except (TypeError, ValueError):
                raise ValueError(f"retry policy: {name} must be a number of seconds, not {v!r}") from None
            if not math.isfinite(f):
                raise ValueError(f"retry policy: {name} must be finite, not {v!r}")
            return f
        if isinstance(self.max_attempts, bool) or not isinstance(self.max_attempts, int) or \
                not 2 <= self.max_attempts <= MAX_GRPC_ATTEMPTS:
            raise ValueError(f"retry policy: max_attempts must be an integer in [2, {MAX_GRPC_ATTEMPTS}] (gRPC's cap), "
                             f"not {self.max_attempts!r}")
        if not finite("initial_backoff", self.initial_backoff) > 0:
            raise ValueError(f"retry policy: initial_backoff must be > 0 s, not {self.initial_backoff!r}")
        if not finite("max_backoff", self.max_backoff) >= float(self.initial_backoff):
            raise ValueError(f"retry policy: max_backoff ({self.max_backoff!r}) must be >= initial_backoff "
                             f"({self.initial_backoff!r})")
        if not finite("backoff_multiplier", self.backoff_multiplier) >= 1:
            raise ValueError(f"retry policy: backoff_multiplier must be >= 1, not {self.backoff_multiplier!r}")
        if isinstance(self.rounds, bool) or not isinstance(self.rounds, int) or self.rounds < 0:
            raise ValueError(f"retry policy: rounds must be an integer >= 0, not {self.rounds!r}")

    def backoff(self, retry: int) -> float:
        """The wait before the client's ``retry``-th whole-call repeat (0-based), seconds."""
        return min(self.max_backoff, self.initial_backoff * self.backoff_multiplier ** retry)

    def grpc_policy(self) -> dict:
        """The service config's ``retryPolicy`` object."""
        return {"maxAttempts": self.max_attempts, "initialBackoff": _duration(self.initial_backoff),
                "maxBackoff": _duration(self.max_backoff), "backoffMultiplier": float(self.backoff_multiplier),
                "retryableStatusCodes": ["UNAVAILABLE"]}


def _duration(seconds: float) -> str:
    """A protobuf JSON Duration: decimal seconds with an "s" (at most nanosecond digits)."""
    text = f"{float(seconds):.9f}".rstrip("0").rstrip(".")
    return f"{text}s"


def _host_port(entry: str, where: str) -> Tuple[str, int]:
    """Splits "host:port" or "[v6]:port"; the port must be given and in [1, 65535]."""
    e = entry.strip()
    if e.startswith("["):
        close = e.find("]")
        if close < 0 or not e[close + 1:].startswith(":"):
            raise ValueError(f"{where}: {entry!r} is not [ipv6]:port")
        host, port = e[1:close], e[close + 2:]
    else:
        host, sep, port = e.rpartition(":")
        if not sep or not host or ":" in host:
            raise ValueError(f"{where}: {entry!r} is not host:port (an IPv6 address goes in brackets: [::1]:50051)")
    if not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ValueError(f"{where}: {entry!r} has no port in [1, 65535]")
    return host, int(port)


def _ip_version(host: str) -> Optional[int]:
    try:
        return ipaddress.ip_address(host).version
    except ValueError:
        return None


def _address_list(entries: Sequence[str], where: str) -> str:
    """A gRPC ``ipv4:`` or ``ipv6:`` target of IP literal addresses."""
    if not entries:
        raise ValueError(f"{where}: no addresses")
    versions = set()
    out: List[str] = []
    for entry in entries:
        if not isinstance(entry, str) or not entry.strip():
            raise ValueError(f"{where}: an empty address in {list(entries)!r}")
        host, port = _host_port(entry, where)
        v = _ip_version(host)
        if v is None:
            raise ValueError(f"{where}: {entry!r} is a name, not an IP address; a list takes IP addresses "
                             f"(a name that resolves to several replicas goes alone: dns:///{host}:{port})")
        versions.add(v)
        out.append(f"[{host}]:{port}" if v == 6 else f"{host}:{port}")
    if len(versions) > 1:
        raise ValueError(f"{where}: IPv4 and IPv6 addresses cannot be mixed in one list: {list(entries)!r}")
    return ("ipv6:" if versions == {6} else "ipv4:") + ",".join(out)


def resolve_target(target: Target) -> Tuple[str, bool]:
    """The gRPC target for ``target`` and whether it may name several replicas (a list or a ``dns:`` name).

    Raises ValueError, naming the bad entry, for an empty target, an address without a port or with one
    outside [1, 65535], a name inside a list, or IPv4 and IPv6 mixed in one list.
    """
    if not isinstance(target, str):
        entries = list(target)
        if len(entries) == 1 and isinstance(entries[0], str):
            return resolve_target(entries[0])
        return _address_list(entries, "target list"), True
    t = target.strip()
    if not t:
        raise ValueError("target is empty (expected host:port, a list of them, or dns:///name:port)")
    scheme = t.split(":", 1)[0]
    if scheme in ("ipv4", "ipv6"):
        entries = t[len(scheme) + 1:].split(",")
        resolved = _address_list(entries, f"target {t!r}")
        if (resolved.split(":", 1)[0]) != scheme:
            raise ValueError(f"target {t!r}: the addresses are not {scheme} addresses")
        return resolved, len(entries) > 1
    if scheme == "dns":
        rest = t[4:]
        if rest.startswith("//"):
            slash = rest.find("/", 2)
            if slash < 0:
                raise ValueError(f"target {t!r}: expected dns:///name:port or dns://resolver/name:port")
            rest = rest[slash + 1:]
        _host_port(rest, f"target {t!r}")
        return t, True
    if scheme in ("unix", "unix-abstract", "vsock"):
        return t, False
    if "," in t:
        return _address_list(t.split(","), f"target {t!r}"), True
    _host_port(t, f"target {t!r}")
    return t, False


def service_config(round_robin: bool, retry: Optional[RetryPolicy]) -> Optional[str]:
    """The channel's service config JSON: ``round_robin`` balancing and the retry policy, or None."""
    config: dict = {}
    if round_robin:
        config["loadBalancingConfig"] = [{"round_robin": {}}]
    if retry is not None:
        names = [{"service": SERVICE, "method": m} for m in RETRYABLE_METHODS]
        names.append({"service": "grpc.health.v1.Health", "method": "Check"})
        config["methodConfig"] = [{"name": names, "retryPolicy": retry.grpc_policy()}]
    return json.dumps(config, separators=(",", ":")) if config else None


def channel_options(round_robin: bool, retry: Optional[RetryPolicy], max_message_bytes: int) -> List[Tuple[str, Any]]:
    """gRPC channel options for the balancing and retry settings."""
    opts: List[Tuple[str, Any]] = []
    config = service_config(round_robin, retry)
    if config is not None:
        opts.append(("grpc.service_config", config))
    if retry is not None:
        opts.append(("grpc.enable_retries", 1))
        # A call stays retryable while its request is buffered; gRPC's default buffer is 256 KiB, less
        # than one batch of states.
        opts.append(("grpc.per_rpc_retry_buffer_size", int(max_message_bytes)))
    return opts


__all__ = ["RetryPolicy", "resolve_target", "service_config", "channel_options", "RETRYABLE_METHODS", "SERVICE"]
