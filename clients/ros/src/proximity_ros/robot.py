"""What the bridge reads from a robot's URDF and SRDF itself: joints with their velocity limits, the
root link, SRDF groups (joint sets) and the virtual joint's parent frame.

Collision geometry, limits and allowed pairs are proximityd's business (the URDF and SRDF go to it
whole); this module only answers what the service does not: which joints an SRDF group moves, how
fast each joint may turn (for timing trajectories), and the planning frame's name.
"""
from __future__ import annotations

import hashlib
import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Set


class RobotDescriptionError(ValueError):
    """A URDF or SRDF the bridge cannot read; the message names the problem."""


@dataclass(frozen=True)
class Joint:
    """One URDF joint."""

    name: str
    type: str                 #: revolute, continuous, prismatic, fixed, floating, planar
    parent: str
    child: str
    velocity: Optional[float]  #: <limit velocity>, rad/s or m/s; None when absent or not positive
    mimic: Optional[str] = None  #: the joint this one mimics

    @property
    def movable(self) -> bool:
        return self.type in ("revolute", "continuous", "prismatic")


@dataclass
class RobotDescription:
    """The parts of a URDF (and optional SRDF) the bridge needs."""

    name: str
    root_link: str
    joints: Dict[str, Joint]
    #: SRDF group name -> its joints (movable, non-mimic), in URDF order
    groups: Dict[str, List[str]] = field(default_factory=dict)
    #: SRDF virtual_joint parent frame, or None
    virtual_parent: Optional[str] = None
    links: List[str] = field(default_factory=list)

    @property
    def planning_frame(self) -> str:
        """MoveIt's planning frame: the SRDF virtual joint's parent frame, else the URDF root link."""
        return self.virtual_parent or self.root_link

    def group_joints(self, group: str, scene_joints: Sequence[str]) -> List[str]:
        """The scene joints a group moves ("" or None: all of them); RobotDescriptionError for an
        unknown group, naming the known ones."""
        if not group:
            return list(scene_joints)
        if group not in self.groups:
            known = ", ".join(sorted(self.groups)) or "none (no SRDF groups)"
            raise RobotDescriptionError(f"unknown group_name {group!r}; known groups: {known}")
        members = set(self.groups[group])
        return [j for j in scene_joints if j in members]

    def velocity_limit(self, joint: str) -> Optional[float]:
        j = self.joints.get(joint)
        return None if j is None else j.velocity


def _float(value: Optional[str], what: str) -> Optional[float]:
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        raise RobotDescriptionError(f"{what}: {value!r} is not a number") from None


def parse_urdf(urdf: str) -> RobotDescription:
    """Joints, links and the root link of a URDF given as text."""
    try:
        root = ET.fromstring(urdf)
    except ET.ParseError as e:
        raise RobotDescriptionError(f"the URDF is not valid XML ({e})") from None
    if root.tag != "robot":
        raise RobotDescriptionError(f"the URDF's root element is <{root.tag}>, not <robot>")
    links = [l.get("name", "") for l in root.findall("link")]
    joints: Dict[str, Joint] = {}
    children: Set[str] = set()
    for j in root.findall("joint"):
        name = j.get("name") or ""
        parent = j.find("parent")
        child = j.find("child")
        if not name or parent is None or child is None:
            raise RobotDescriptionError(f"URDF joint {name!r} lacks a name, <parent> or <child>")
        limit = j.find("limit")
        velocity = _float(limit.get("velocity"), f"joint {name} <limit velocity>") if limit is not None else None
        if velocity is not None and not (math.isfinite(velocity) and velocity > 0):
            velocity = None
        mimic = j.find("mimic")
        joints[name] = Joint(name, j.get("type", ""), parent.get("link", ""), child.get("link", ""), velocity,
                             mimic.get("joint") if mimic is not None else None)
        children.add(child.get("link", ""))
    roots = [l for l in links if l not in children]
    if len(roots) != 1:
        raise RobotDescriptionError(f"the URDF has {len(roots)} root links ({', '.join(roots) or 'none'}), not one")
    return RobotDescription(name=root.get("name", ""), root_link=roots[0], joints=joints, links=links)


def _chain_joints(desc: RobotDescription, base: str, tip: str, group: str) -> List[str]:
    """Joints from base_link down to tip_link (URDF order: base first)."""
    by_child = {j.child: j for j in desc.joints.values()}
    out: List[str] = []
    link = tip
    while link != base:
        j = by_child.get(link)
        if j is None:
            raise RobotDescriptionError(f"SRDF group {group!r}: <chain> tip_link {tip!r} is not below base_link {base!r}")
        out.append(j.name)
        link = j.parent
    return list(reversed(out))


def add_srdf(desc: RobotDescription, srdf: str) -> RobotDescription:
    """Reads the SRDF's groups and virtual joint into ``desc`` (returned)."""
    try:
        root = ET.fromstring(srdf)
    except ET.ParseError as e:
        raise RobotDescriptionError(f"the SRDF is not valid XML ({e})") from None
    by_child = {j.child: j.name for j in desc.joints.values()}
    raw: Dict[str, ET.Element] = {g.get("name", ""): g for g in root.findall("group")}

    def members(name: str, seen: Set[str]) -> List[str]:
        if name in seen:
            raise RobotDescriptionError(f"SRDF group {name!r} contains itself")
        g = raw.get(name)
        if g is None:
            raise RobotDescriptionError(f"SRDF names an unknown subgroup {name!r}")
        out: List[str] = []
        for e in g:
            if e.tag == "joint":
                jn = e.get("name", "")
                if jn not in desc.joints:
                    raise RobotDescriptionError(f"SRDF group {name!r} names unknown joint {jn!r}")
                out.append(jn)
            elif e.tag == "link":
                ln = e.get("name", "")
                if ln in by_child:
                    out.append(by_child[ln])
            elif e.tag == "chain":
                out.extend(_chain_joints(desc, e.get("base_link", ""), e.get("tip_link", ""), name))
            elif e.tag == "group":
                out.extend(members(e.get("name", ""), seen | {name}))
        return out

    groups: Dict[str, List[str]] = {}
    order = list(desc.joints)
    for name in raw:
        joints = set(members(name, set()))
        groups[name] = [j for j in order if j in joints and desc.joints[j].movable and desc.joints[j].mimic is None]
    desc.groups = groups
    vj = root.find("virtual_joint")
    desc.virtual_parent = vj.get("parent_frame") if vj is not None else None
    return desc


def describe(urdf: str, srdf: str = "") -> RobotDescription:
    """parse_urdf plus add_srdf when an SRDF is given."""
    desc = parse_urdf(urdf)
    return add_srdf(desc, srdf) if srdf and srdf.strip() else desc


def content_key(*parts: str) -> str:
    """A short hash of texts, to notice when a robot description changes."""
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


__all__ = ["RobotDescriptionError", "Joint", "RobotDescription", "parse_urdf", "add_srdf", "describe", "content_key"]
