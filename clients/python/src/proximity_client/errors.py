"""Exceptions raised by the client: one class per gRPC status code the service documents."""
from __future__ import annotations

from typing import Dict, Optional, Type

import grpc


class ProximityWarning(UserWarning):
    """Something a request gave that the server accepted as MoveIt accepts it (values for joints the scene
    lacks, ignored; values just outside a joint limit, clamped to it): shown once per call by default."""


class ProximityError(Exception):
    """A call to proximityd failed.

    Attributes:
        code: the gRPC status code (``grpc.StatusCode``).
        details: the server's (or gRPC's) message, naming the offending field where the server knows it.
        method: the RPC that failed (``"CheckStates"``), when known.
    """

    code: grpc.StatusCode = grpc.StatusCode.UNKNOWN

    def __init__(self, code: grpc.StatusCode, details: str, method: Optional[str] = None) -> None:
        self.code = code
        self.details = details or ""
        self.method = method
        where = f"{method}: " if method else ""
        super().__init__(f"{where}{code.name}: {self.details}")


class InvalidArgumentError(ProximityError):
    """INVALID_ARGUMENT: wrong joint count, NaN, unknown joint or object name, bad mesh or budget."""


class NotFoundError(ProximityError):
    """NOT_FOUND: the scene id is not loaded on the server that answered."""


class AlreadyExistsError(ProximityError):
    """ALREADY_EXISTS."""


class FailedPreconditionError(ProximityError):
    """FAILED_PRECONDITION: the request cannot run in the server's current state."""


class AbortedError(ProximityError):
    """ABORTED: a conflict (for example a scene version conflict)."""


class ResourceExhaustedError(ProximityError):
    """RESOURCE_EXHAUSTED: the request exceeds a server limit (batch size, message size) or overload."""


class DeadlineExceededError(ProximityError):
    """DEADLINE_EXCEEDED: the call's deadline passed before it finished."""


class CancelledError(ProximityError):
    """CANCELLED: the call was cancelled (by this client or the server)."""


class UnavailableError(ProximityError):
    """UNAVAILABLE: the server cannot be reached or is draining; safe to retry elsewhere."""


class UnimplementedError(ProximityError):
    """UNIMPLEMENTED: the server does not implement this RPC or option."""


class InternalError(ProximityError):
    """INTERNAL: a bug on the server."""


class UnauthenticatedError(ProximityError):
    """UNAUTHENTICATED."""


class PermissionDeniedError(ProximityError):
    """PERMISSION_DENIED."""


_BY_CODE: Dict[grpc.StatusCode, Type[ProximityError]] = {
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgumentError,
    grpc.StatusCode.NOT_FOUND: NotFoundError,
    grpc.StatusCode.ALREADY_EXISTS: AlreadyExistsError,
    grpc.StatusCode.FAILED_PRECONDITION: FailedPreconditionError,
    grpc.StatusCode.ABORTED: AbortedError,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhaustedError,
    grpc.StatusCode.DEADLINE_EXCEEDED: DeadlineExceededError,
    grpc.StatusCode.CANCELLED: CancelledError,
    grpc.StatusCode.UNAVAILABLE: UnavailableError,
    grpc.StatusCode.UNIMPLEMENTED: UnimplementedError,
    grpc.StatusCode.INTERNAL: InternalError,
    grpc.StatusCode.UNAUTHENTICATED: UnauthenticatedError,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDeniedError,
}


def error_for(code: grpc.StatusCode, details: str, method: Optional[str] = None) -> ProximityError:
    """The ProximityError subclass for ``code``."""
    cls = _BY_CODE.get(code, ProximityError)
    err = cls(code, details, method)
    return err


def from_rpc_error(error: grpc.RpcError, method: Optional[str] = None) -> ProximityError:
    """Converts a ``grpc.RpcError`` (which is also a ``grpc.Call``) to a ProximityError."""
    code = error.code() if hasattr(error, "code") else grpc.StatusCode.UNKNOWN
    details = error.details() if hasattr(error, "details") else str(error)
    if code is None:
        code = grpc.StatusCode.UNKNOWN
    return error_for(code, details or "", method)
