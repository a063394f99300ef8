"""A robot's files as one upload: the URDF, the SRDF and every collision mesh the URDF names, read on
the client's machine, so that a server opens no file of its own (proximityd refuses server paths
unless its operator allowed them). Mesh URIs resolve as ROS tools resolve them: ``package://pkg/rest``
through ``package_dirs`` and then the ROS_PACKAGE_PATH folders holding a ``package.xml`` whose
``<name>`` is ``pkg``; ``file://`` and absolute paths as they are; other paths relative to the URDF's
folder. Meshes are keyed by the URI exactly as the URDF writes it."""
from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Mapping, Optional


@dataclass
class RobotBundle:
    """What CreateScene uploads for a robot: URDF and SRDF text and the files the URDF names."""
    urdf: str
    srdf: str = ""
    files: Dict[str, bytes] = field(default_factory=dict)


def _is_metapackage(path: Path) -> bool:
    try:
        return ET.parse(path).getroot().find("./export/metapackage") is not None
    except (ET.ParseError, OSError):
        return False


def _package_xml_name(path: Path) -> Optional[str]:
    try:
        name = ET.parse(path).getroot().findtext("name")
    except (ET.ParseError, OSError):
        return None
    return name.strip() if name else None


def _crawl(roots: str) -> Dict[str, Path]:
    """Packages under ROS_PACKAGE_PATH-style roots, found as rospack finds them (rospkg's
    ``list_by_path``): <name> of each package.xml that is not a metapackage -> its folder, or a rosbuild
    ``manifest.xml`` folder's own name; the crawl follows symbolic links, does not descend into
    packages, hidden folders, folders holding CATKIN_IGNORE or rospack_nosubdirs, or below
    /usr/share/; the first root holding a name wins, and within a root the first folder found."""
    found: Dict[str, Path] = {}
    for root in filter(None, roots.split(os.pathsep)):
        here: Dict[str, Path] = {}
        for dirpath, dirnames, filenames in os.walk(os.path.abspath(root), topdown=True, followlinks=True):
            if "CATKIN_IGNORE" in filenames:
                dirnames[:] = []
                continue
            if "package.xml" in filenames:
                dirnames[:] = []
                if not _is_metapackage(Path(dirpath) / "package.xml"):
                    name = _package_xml_name(Path(dirpath) / "package.xml")
                    if name:
                        here.setdefault(name, Path(dirpath))
                continue
            if "manifest.xml" in filenames:
                here.setdefault(os.path.basename(dirpath), Path(dirpath))
                dirnames[:] = []
                continue
            if "rospack_nosubdirs" in filenames or dirpath.startswith("/usr/share/"):
                dirnames[:] = []
                continue
            dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for name, folder in here.items():
            found.setdefault(name, folder)
    return found


def resolve_uri(uri: str, urdf_dir: Path, package_dirs: Mapping[str, str],
                ros_package_path: Optional[str] = None) -> Path:
    """The local file a URDF mesh URI names; FileNotFoundError naming the URI and what was tried."""
    tried = []
    if uri.startswith("package://"):
        pkg, _, rest = uri[len("package://"):].partition("/")
        if not pkg or not rest:
            raise FileNotFoundError(f"mesh URI {uri!r} has no package/path")
        if pkg in package_dirs:
            p = Path(package_dirs[pkg]) / rest
            if p.is_file():
                return p
            tried.append(str(p))
        roots = os.environ.get("ROS_PACKAGE_PATH", "") if ros_package_path is None else ros_package_path
        packages = _crawl(roots)
        if pkg in packages:
            p = packages[pkg] / rest
            if p.is_file():
                return p
            tried.append(str(p))
        hint = "" if pkg in package_dirs or pkg in packages else \
            f"; give package_dirs={{'{pkg}': FOLDER}} or a ROS_PACKAGE_PATH holding its package.xml"
        raise FileNotFoundError(f"cannot resolve mesh URI {uri!r}; tried: {tried or 'nothing'}{hint}")
    path = Path(uri[len("file://"):] if uri.startswith("file://") else uri)
    p = path if path.is_absolute() else urdf_dir / path
    if not p.is_file():
        raise FileNotFoundError(f"cannot resolve mesh URI {uri!r}; tried: {str(p)!r}")
    return p


def robot_bundle(urdf_file: "str | os.PathLike[str]", srdf_file: "str | os.PathLike[str] | None" = None,
                 package_dirs: Optional[Mapping[str, str]] = None,
                 ros_package_path: Optional[str] = None, collision_from_visual: bool = False) -> RobotBundle:
    """Reads a URDF (and SRDF) and every collision mesh file its links name, for upload; with
    ``collision_from_visual`` also their visual meshes."""
    urdf_path = Path(urdf_file)
    urdf = urdf_path.read_bytes().decode("utf-8")  # as written: no newline translation
    srdf = Path(srdf_file).read_bytes().decode("utf-8") if srdf_file else ""
    return bundle_from_text(urdf, srdf, urdf_path.resolve().parent, package_dirs, ros_package_path,
                            collision_from_visual)


def bundle_from_text(urdf: str, srdf: str = "", base_dir: "str | os.PathLike[str]" = ".",
                     package_dirs: Optional[Mapping[str, str]] = None, ros_package_path: Optional[str] = None,
                     collision_from_visual: bool = False) -> RobotBundle:
    """The bundle of a URDF given as text (a ROS robot_description parameter, say): every collision
    mesh it names (visual ones too with ``collision_from_visual``) read on this machine; paths that are
    not URIs resolve against ``base_dir``."""
    root = ET.fromstring(urdf)
    files: Dict[str, bytes] = {}
    kinds = ("collision", "visual") if collision_from_visual else ("collision",)
    base = Path(base_dir).resolve()
    for kind in kinds:
        for mesh in root.findall(f"./link/{kind}/geometry/mesh"):
            uri = mesh.get("filename")
            if not uri or uri in files:
                continue
            try:
                files[uri] = resolve_uri(uri, base, package_dirs or {}, ros_package_path).read_bytes()
            except FileNotFoundError:
                if kind == "visual":
                    continue  # as ROS tools do: the server keeps that link's collision geometry, and says so
                raise
    return RobotBundle(urdf=urdf, srdf=srdf or "", files=files)
