"""ROS 1 (genpy) messages to and from the plain data of :mod:`proximity_ros.convert`.

:func:`to_dict` gives the shape ``ros2 topic echo --yaml`` prints (times and durations as
``{"sec", "nanosec"}``), so the bridge's logic sees one shape whichever ROS it runs under;
:func:`fill` writes such data into a genpy message. Only genpy is needed (no rospy).
"""
from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, Dict, Tuple

import genpy
import genpy.message

# Mapping is collections.abc's, not typing's: isinstance against typing's alias goes through its
# __instancecheck__ at several times the cost, and fill() runs for every field of every message the node
# publishes (a ~clearance message at the joint-state rate has dozens).


def to_dict(msg: Any) -> Any:
    """A genpy message (or value) as dicts, lists and numbers."""
    if isinstance(msg, (genpy.Time, genpy.Duration)):
        return {"sec": int(msg.secs), "nanosec": int(msg.nsecs)}
    if isinstance(msg, genpy.Message):
        return {name: to_dict(getattr(msg, name)) for name in msg.__slots__}
    if isinstance(msg, (list, tuple)):
        return [to_dict(v) for v in msg]
    return msg


def _time(cls: type, value: Any) -> Any:
    if isinstance(value, Mapping):
        sec = value.get("sec", value.get("secs", 0))
        nsec = value.get("nanosec", value.get("nsecs", 0))
        return cls(int(sec), int(nsec))
    if isinstance(value, (int, float)):
        return cls.from_sec(float(value))
    return value


@functools.lru_cache(maxsize=None)
def _element_class(slot_type: str) -> type:
    base = slot_type.split("[", 1)[0]
    if base == "Header":
        base = "std_msgs/Header"
    return genpy.message.get_message_class(base)


# Per message class: field -> (slot type, its base type, whether it is an array).
_SLOT_TYPES: Dict[type, Dict[str, Tuple[str, str, bool]]] = {}


def _is_mapping(value: Any) -> bool:
    return type(value) is dict or isinstance(value, Mapping)


def fill(msg: Any, data: Mapping[str, Any]) -> Any:
    """Writes ``data`` (dict-shaped, as :func:`to_dict` gives) into genpy message ``msg``; fields not in
    ``data`` keep their values. Returns ``msg``."""
    types = _SLOT_TYPES.get(type(msg))
    if types is None:
        types = _SLOT_TYPES[type(msg)] = {name: (t, t.split("[", 1)[0], t.endswith("]"))
                                          for name, t in zip(msg.__slots__, msg._slot_types)}
    for name, value in data.items():
        if name not in types:
            raise KeyError(f"{type(msg).__name__} has no field {name!r}")
        t, base, is_array = types[name]
        if base in ("time", "duration"):
            cls = genpy.Time if base == "time" else genpy.Duration
            setattr(msg, name, [_time(cls, v) for v in value] if is_array else _time(cls, value))
        elif is_array and ("/" in base or base == "Header"):
            cls = _element_class(t)
            setattr(msg, name, [fill(cls(), v) if _is_mapping(v) else v for v in value])
        elif is_array:
            setattr(msg, name, value if isinstance(value, (bytes, str)) else list(value))
        elif _is_mapping(value):
            fill(getattr(msg, name), value)
        else:
            setattr(msg, name, value)
    return msg


__all__ = ["to_dict", "fill"]
