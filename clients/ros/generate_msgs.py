#!/usr/bin/python3
"""Generates the Python code of the proximity_msgs package with genpy, as catkin would, without catkin.

    /usr/bin/python3 clients/ros/generate_msgs.py --out OUT_DIR

writes OUT_DIR/proximity_msgs/{msg,srv}/*.py (import with OUT_DIR on PYTHONPATH). The message
definitions of the packages proximity_msgs depends on are Debian's (/usr/share/<pkg>/msg, packages
ros-std-msgs, ros-geometry-msgs, ros-sensor-msgs, ros-shape-msgs, ros-trajectory-msgs). The build runs
this (clients/ros/CMakeLists.txt, target proximity_ros_msgs); the tests run it into a temporary
folder when no build output is given.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import List

HERE = Path(__file__).resolve().parent
PACKAGE = "proximity_msgs"
SOURCE = HERE / PACKAGE
DEPENDENCIES = ("std_msgs", "geometry_msgs", "sensor_msgs", "shape_msgs", "trajectory_msgs")
SHARE = Path("/usr/share")


def search_path() -> dict:
    """genmsg's search path: package -> folders of .msg files."""
    path = {PACKAGE: [str(SOURCE / "msg")]}
    for dep in DEPENDENCIES:
        folder = SHARE / dep / "msg"
        if not folder.is_dir():
            raise SystemExit(f"generate_msgs: {folder} is missing (apt-get install ros-{dep.replace('_', '-')})")
        path[dep] = [str(folder)]
    return path


def generate(out: Path) -> List[Path]:
    """Generates every message and service into ``out``; returns the generated package folder's files."""
    try:
        import genpy.generator
        from genpy.generate_initpy import write_modules
    except ImportError as e:
        raise SystemExit(f"generate_msgs: genpy is missing ({e}; apt-get install python3-genpy)") from None
    package_dir = out / PACKAGE
    msgs = sorted(str(p) for p in (SOURCE / "msg").glob("*.msg"))
    srvs = sorted(str(p) for p in (SOURCE / "srv").glob("*.srv"))
    paths = search_path()
    for kind, files, gen in (("msg", msgs, genpy.generator.MsgGenerator()),
                             ("srv", srvs, genpy.generator.SrvGenerator())):
        target = package_dir / kind
        target.mkdir(parents=True, exist_ok=True)
        if gen.generate_messages(PACKAGE, files, str(target), paths):
            raise SystemExit(f"generate_msgs: genpy failed on {kind} files of {PACKAGE}")
        write_modules(str(target))
    (package_dir / "__init__.py").write_text("")
    return sorted(package_dir.rglob("*.py"))


def main(argv: "List[str] | None" = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="folder to write the proximity_msgs package into")
    parser.add_argument("--stamp", help="file touched after a successful generation (for the build)")
    args = parser.parse_args(argv)
    files = generate(Path(args.out))
    if args.stamp:
        Path(args.stamp).write_text("".join(f"{f}\n" for f in files))
    print(f"generate_msgs: {len(files)} files in {Path(args.out) / PACKAGE}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
