"""Reading point clouds from files: NumPy ``.npy``, ``.ply`` and PCL's ``.pcd``.

* ``.npy``: a numeric array of shape (n, 3), or (n, k >= 3) whose first three columns are x, y, z; or a
  structured array with ``x``, ``y`` and ``z`` fields.
* ``.ply``: ``format ascii``, ``binary_little_endian`` or ``binary_big_endian``; the ``vertex`` element's
  ``x``, ``y``, ``z`` properties of any scalar type (char ... double, int8 ... float64). Other properties
  are skipped by their sizes, other elements (faces with list properties too) by their layout.
* ``.pcd`` (PCL, v0.5 to v0.7): the VERSION, FIELDS, SIZE, TYPE, COUNT, WIDTH, HEIGHT, VIEWPOINT, POINTS
  and DATA header lines; ``DATA ascii``, ``binary`` and ``binary_compressed`` (LZF); fields ``x``, ``y``,
  ``z`` among others of any size, type and count (a field with COUNT > 1 gives its first value).
  VIEWPOINT is not applied to the points (as PCL's reader does not).

:func:`read_points` returns the points as an (n, 3) float64 array in the file's units, and how many
points were dropped because a coordinate is NaN (organized clouds mark missing returns so). Any file
that cannot be read raises :class:`PointFileError` (a ValueError) naming the file and the problem.
"""
from __future__ import annotations

import struct
from pathlib import Path
from typing import Dict, List, NamedTuple, Optional, Tuple, Union

import numpy as np


class PointFileError(ValueError):
    """A file cannot be read as points; the message names the file and what is wrong."""


class PointFile(NamedTuple):
    """Points read from a file: ``points, nan_dropped = read_points(path)``."""

    points: np.ndarray   #: (n, 3) float64, the points without NaN coordinates
    nan_dropped: int     #: points dropped because some coordinate was NaN
    format: str          #: "npy", "ply (binary_little_endian)", "pcd (ascii)", ...


FORMATS = (".npy", ".ply", ".pcd")


def read_points(path: Union[str, Path]) -> PointFile:
    """The points of a ``.npy``, ``.ply`` or ``.pcd`` file (by its extension), NaN points dropped and counted."""
    p = Path(path)
    ext = p.suffix.lower()
    if ext not in FORMATS:
        raise PointFileError(f"{path}: not a point file (give {', '.join(FORMATS)})")
    try:
        data = p.read_bytes()
    except OSError as e:
        raise PointFileError(f"{path}: cannot be read: {e.strerror or e}") from None
    reader = {".npy": _read_npy, ".ply": _read_ply, ".pcd": _read_pcd}[ext]
    points, fmt = reader(data, str(path))
    return _finish(points, fmt, str(path))


def _finish(points: np.ndarray, fmt: str, where: str) -> PointFile:
    points = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    nan = np.isnan(points).any(axis=1)
    points = points[~nan]
    if not np.isfinite(points).all():
        bad = int((~np.isfinite(points)).any(axis=1).sum())
        raise PointFileError(f"{where}: {bad} point(s) have infinite coordinates")
    return PointFile(np.ascontiguousarray(points), int(nan.sum()), fmt)


# ---- .npy -------------------------------------------------------------------------------------------

def _read_npy(data: bytes, where: str) -> Tuple[np.ndarray, str]:
    import io
    try:
        arr = np.load(io.BytesIO(data), allow_pickle=False)
    except (ValueError, EOFError, OSError) as e:
        raise PointFileError(f"{where}: not a readable .npy array ({e})") from None
    if not isinstance(arr, np.ndarray):
        raise PointFileError(f"{where}: holds several arrays (.npz); give one (n, 3) array")
    if arr.dtype.names is not None:
        missing = [c for c in "xyz" if c not in arr.dtype.names]
        if missing:
            raise PointFileError(f"{where}: a structured array without field(s) {', '.join(missing)} "
                                 f"(it has {', '.join(arr.dtype.names)})")
        for c in "xyz":
            if arr.dtype[c].kind not in "fiu" or arr.dtype[c].shape:
                raise PointFileError(f"{where}: field {c} is {arr.dtype[c]}, not a number")
        flat = arr.reshape(-1)
        return np.stack([flat[c].astype(np.float64) for c in "xyz"], axis=1), "npy"
    if arr.dtype.kind not in "fiu":
        raise PointFileError(f"{where}: an array of {arr.dtype}, not of numbers")
    if arr.ndim != 2 or arr.shape[1] < 3:
        raise PointFileError(f"{where}: an array of shape {arr.shape}; points are (n, 3) (or (n, k >= 3), x y z "
                             "first)")
    return arr[:, :3].astype(np.float64), "npy"


# ---- .ply -------------------------------------------------------------------------------------------

_PLY_TYPES = {"char": "i1", "int8": "i1", "uchar": "u1", "uint8": "u1", "short": "i2", "int16": "i2",
              "ushort": "u2", "uint16": "u2", "int": "i4", "int32": "i4", "uint": "u4", "uint32": "u4",
              "float": "f4", "float32": "f4", "double": "f8", "float64": "f8"}


class _PlyProperty(NamedTuple):
    name: str
    dtype: str                    #: numpy type code without byte order ("f4")
    count_dtype: Optional[str]    #: a list's count type, None for a scalar


class _PlyElement(NamedTuple):
    name: str
    count: int
    properties: List[_PlyProperty]


def _header_end(data: bytes, marker: bytes, where: str, what: str) -> int:
    """The offset just past the line starting with ``marker`` (its newline included)."""
    pos = 0
    while True:
        nl = data.find(b"\n", pos)
        if nl < 0:
            raise PointFileError(f"{where}: the header has no {what} line")
        if data[pos:nl].strip().startswith(marker):
            return nl + 1
        pos = nl + 1


def _read_ply(data: bytes, where: str) -> Tuple[np.ndarray, str]:
    if not data.startswith(b"ply"):
        raise PointFileError(f"{where}: not a PLY file (it does not start with 'ply')")
    end = _header_end(data, b"end_header", where, "end_header")
    try:
        lines = data[:end].decode("ascii").splitlines()
    except UnicodeDecodeError:
        raise PointFileError(f"{where}: the header is not ASCII text") from None
    fmt: Optional[str] = None
    elements: List[_PlyElement] = []
    for number, line in enumerate(lines[1:], 2):
        words = line.split()
        if not words or words[0] in ("comment", "obj_info", "end_header"):
            continue
        if words[0] == "format":
            if len(words) != 3 or words[1] not in ("ascii", "binary_little_endian", "binary_big_endian"):
                raise PointFileError(f"{where}: header line {number}: unknown format {' '.join(words[1:])!r} "
                                     "(ascii, binary_little_endian or binary_big_endian)")
            fmt = words[1]
        elif words[0] == "element":
            if len(words) != 3 or not words[2].isdigit():
                raise PointFileError(f"{where}: header line {number}: write 'element NAME COUNT', got {line!r}")
            elements.append(_PlyElement(words[1], int(words[2]), []))
        elif words[0] == "property":
            if not elements:
                raise PointFileError(f"{where}: header line {number}: a property before any element")
            if len(words) == 5 and words[1] == "list":
                if words[2] not in _PLY_TYPES or words[3] not in _PLY_TYPES:
                    raise PointFileError(f"{where}: header line {number}: unknown type in {line!r}")
                if _PLY_TYPES[words[2]][0] == "f":
                    raise PointFileError(f"{where}: header line {number}: a list count must be an integer type")
                elements[-1].properties.append(_PlyProperty(words[4], _PLY_TYPES[words[3]], _PLY_TYPES[words[2]]))
            elif len(words) == 3 and words[1] in _PLY_TYPES:
                elements[-1].properties.append(_PlyProperty(words[2], _PLY_TYPES[words[1]], None))
            else:
                raise PointFileError(f"{where}: header line {number}: unknown property {line!r}")
        else:
            raise PointFileError(f"{where}: header line {number}: unknown keyword {words[0]!r}")
    if fmt is None:
        raise PointFileError(f"{where}: the header has no format line")
    vertex = next((e for e in elements if e.name == "vertex"), None)
    if vertex is None:
        raise PointFileError(f"{where}: no vertex element (elements: {', '.join(e.name for e in elements) or 'none'})")
    names = [p.name for p in vertex.properties]
    missing = [c for c in "xyz" if c not in names]
    if missing:
        raise PointFileError(f"{where}: the vertex element has no {', '.join(missing)} propert"
                             f"{'y' if len(missing) == 1 else 'ies'} (it has {', '.join(names) or 'none'})")
    for c in "xyz":
        if vertex.properties[names.index(c)].count_dtype is not None:
            raise PointFileError(f"{where}: vertex property {c} is a list, not a number")
    body = data[end:]
    if fmt == "ascii":
        points = _ply_ascii(body, elements, vertex, where)
    else:
        points = _ply_binary(body, elements, vertex, "<" if fmt == "binary_little_endian" else ">", where)
    return points, f"ply ({fmt})"


def _ply_ascii(body: bytes, elements: List[_PlyElement], vertex: _PlyElement, where: str) -> np.ndarray:
    tokens = body.split()
    pos = 0
    for e in elements:
        lists = any(p.count_dtype is not None for p in e.properties)
        if not lists:
            need = e.count * len(e.properties)
            if pos + need > len(tokens):
                raise PointFileError(f"{where}: truncated: element {e.name} needs {e.count} rows of "
                                     f"{len(e.properties)} values, the file ends after {(len(tokens) - pos) // max(1, len(e.properties))}")
            if e is vertex:
                cols = [[p.name for p in e.properties].index(c) for c in "xyz"]
                block = np.array(tokens[pos:pos + need], dtype=bytes).reshape(e.count, len(e.properties))[:, cols]
                try:
                    return block.astype(np.float64).reshape(e.count, 3)
                except ValueError as err:
                    raise PointFileError(f"{where}: element vertex: {err}") from None
            pos += need
            continue
        rows = []
        for i in range(e.count):
            row = []
            for p in e.properties:
                if pos >= len(tokens):
                    raise PointFileError(f"{where}: truncated: element {e.name} row {i} of {e.count} is incomplete")
                if p.count_dtype is None:
                    row.append(tokens[pos])
                    pos += 1
                else:
                    try:
                        n = int(tokens[pos])
                    except ValueError:
                        raise PointFileError(f"{where}: element {e.name} row {i}: list count {tokens[pos]!r} is not "
                                             "an integer") from None
                    if n < 0 or pos + 1 + n > len(tokens):
                        raise PointFileError(f"{where}: truncated: element {e.name} row {i}: a list of {n} values")
                    row.append(None)
                    pos += 1 + n
            rows.append(row)
        if e is vertex:
            cols = [[p.name for p in e.properties].index(c) for c in "xyz"]
            try:
                return np.array([[float(r[c]) for c in cols] for r in rows], dtype=np.float64).reshape(-1, 3)
            except ValueError as err:
                raise PointFileError(f"{where}: element vertex: {err}") from None
    raise AssertionError("the vertex element is among the elements")


def _ply_binary(body: bytes, elements: List[_PlyElement], vertex: _PlyElement, order: str,
                where: str) -> np.ndarray:
    pos = 0
    for e in elements:
        lists = any(p.count_dtype is not None for p in e.properties)
        if not lists:
            dt = np.dtype([(f"f{i}", order + p.dtype) for i, p in enumerate(e.properties)])
            need = e.count * dt.itemsize
            if pos + need > len(body):
                raise PointFileError(f"{where}: truncated: element {e.name} needs {need} bytes ({e.count} x "
                                     f"{dt.itemsize}), {len(body) - pos} are left")
            if e is vertex:
                rec = np.frombuffer(body, dtype=dt, count=e.count, offset=pos)
                names = [p.name for p in e.properties]
                return np.stack([rec[f"f{names.index(c)}"].astype(np.float64) for c in "xyz"], axis=1)
            pos += need
            continue
        # Rows of varying length: walk them (lists are in faces and edges; vertices rarely have any).
        out = [] if e is vertex else None
        for i in range(e.count):
            row: Dict[str, float] = {}
            for p in e.properties:
                if p.count_dtype is None:
                    size = np.dtype(p.dtype).itemsize
                    if pos + size > len(body):
                        raise PointFileError(f"{where}: truncated: element {e.name} row {i} of {e.count}")
                    if out is not None:
                        row[p.name] = float(np.frombuffer(body, order + p.dtype, 1, pos)[0])
                    pos += size
                else:
                    csize = np.dtype(p.count_dtype).itemsize
                    if pos + csize > len(body):
                        raise PointFileError(f"{where}: truncated: element {e.name} row {i} of {e.count}")
                    n = int(np.frombuffer(body, order + p.count_dtype, 1, pos)[0])
                    if n < 0:
                        raise PointFileError(f"{where}: element {e.name} row {i}: a list of {n} values")
                    pos += csize + n * np.dtype(p.dtype).itemsize
                    if pos > len(body):
                        raise PointFileError(f"{where}: truncated: element {e.name} row {i}: a list of {n} values")
            if out is not None:
                out.append([row["x"], row["y"], row["z"]])
        if out is not None:
            return np.array(out, dtype=np.float64).reshape(-1, 3)
    raise AssertionError("the vertex element is among the elements")


# ---- .pcd -------------------------------------------------------------------------------------------

_PCD_TYPES = {("F", 4): "f4", ("F", 8): "f8", ("I", 1): "i1", ("I", 2): "i2", ("I", 4): "i4", ("I", 8): "i8",
              ("U", 1): "u1", ("U", 2): "u2", ("U", 4): "u4", ("U", 8): "u8"}
_PCD_KEYS = ("VERSION", "FIELDS", "SIZE", "TYPE", "COUNT", "WIDTH", "HEIGHT", "VIEWPOINT", "POINTS", "DATA")


def _ints(values: List[str], key: str, where: str) -> List[int]:
    try:
        out = [int(v) for v in values]
    except ValueError:
        raise PointFileError(f"{where}: {key} {' '.join(values)!r}: not integers") from None
    if any(v < 0 for v in out):
        raise PointFileError(f"{where}: {key} {' '.join(values)!r}: negative")
    return out


def _read_pcd(data: bytes, where: str) -> Tuple[np.ndarray, str]:
    end = _header_end(data, b"DATA", where, "DATA")
    try:
        lines = data[:end].decode("ascii").splitlines()
    except UnicodeDecodeError:
        raise PointFileError(f"{where}: the header is not ASCII text (is it a .pcd file?)") from None
    header: Dict[str, List[str]] = {}
    for number, line in enumerate(lines, 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        if words[0] not in _PCD_KEYS:
            raise PointFileError(f"{where}: header line {number}: unknown entry {words[0]!r}")
        header[words[0]] = words[1:]
    for key in ("FIELDS", "SIZE", "TYPE", "WIDTH", "HEIGHT", "DATA"):
        if key not in header:
            raise PointFileError(f"{where}: the header has no {key} line")
    fields = header["FIELDS"]
    sizes = _ints(header["SIZE"], "SIZE", where)
    types = header["TYPE"]
    counts = _ints(header["COUNT"], "COUNT", where) if "COUNT" in header else [1] * len(fields)
    for key, values in (("SIZE", sizes), ("TYPE", types), ("COUNT", counts)):
        if len(values) != len(fields):
            raise PointFileError(f"{where}: {len(fields)} FIELDS but {len(values)} {key} values")
    if not fields:
        raise PointFileError(f"{where}: FIELDS names no field")
    dtypes = []
    for f, t, s, c in zip(fields, types, sizes, counts):
        if (t, s) not in _PCD_TYPES:
            raise PointFileError(f"{where}: field {f}: TYPE {t} with SIZE {s} is not a number type (F 4/8, I or U "
                                 "1/2/4/8)")
        if c < 1:
            raise PointFileError(f"{where}: field {f}: COUNT {c}")
        dtypes.append(_PCD_TYPES[(t, s)])
    missing = [c for c in "xyz" if c not in fields]
    if missing:
        raise PointFileError(f"{where}: no field(s) {', '.join(missing)} (FIELDS {' '.join(fields)})")
    width_values = _ints(header["WIDTH"], "WIDTH", where)
    height_values = _ints(header["HEIGHT"], "HEIGHT", where)
    if len(width_values) != 1 or len(height_values) != 1:
        raise PointFileError(f"{where}: WIDTH and HEIGHT take one value each")
    n = width_values[0] * height_values[0]
    if "POINTS" in header:
        points_values = _ints(header["POINTS"], "POINTS", where)
        if len(points_values) != 1 or points_values[0] != n:
            raise PointFileError(f"{where}: POINTS {' '.join(header['POINTS'])} but WIDTH x HEIGHT = "
                                 f"{width_values[0]} x {height_values[0]} = {n}")
    kind = header["DATA"][0] if len(header["DATA"]) == 1 else " ".join(header["DATA"])
    cols = [fields.index(c) for c in "xyz"]
    body = data[end:]
    if kind == "ascii":
        per_point = sum(counts)
        tokens = body.split()
        if len(tokens) != n * per_point:
            raise PointFileError(f"{where}: {'truncated: ' if len(tokens) < n * per_point else ''}DATA ascii holds "
                                 f"{len(tokens)} values, {n} points of {per_point} values need {n * per_point}")
        starts = np.cumsum([0] + counts[:-1])
        table = np.array(tokens, dtype=bytes).reshape(n, per_point)[:, [int(starts[c]) for c in cols]]
        try:
            return table.astype(np.float64).reshape(n, 3), "pcd (ascii)"
        except ValueError as err:
            raise PointFileError(f"{where}: DATA ascii: {err}") from None
    if kind == "binary":
        dt = np.dtype({"names": [f"f{i}" for i in range(len(fields))],
                       "formats": [(("<" + d), (c,)) if c > 1 else "<" + d for d, c in zip(dtypes, counts)],
                       "offsets": list(np.cumsum([0] + [s * c for s, c in zip(sizes, counts)][:-1]).astype(int)),
                       "itemsize": sum(s * c for s, c in zip(sizes, counts))})
        if len(body) != n * dt.itemsize:
            what = "truncated: " if len(body) < n * dt.itemsize else ""
            raise PointFileError(f"{where}: {what}DATA binary holds {len(body)} bytes, {n} points of {dt.itemsize} "
                                 f"bytes need {n * dt.itemsize}")
        rec = np.frombuffer(body, dtype=dt, count=n)
        return np.stack([_first(rec[f"f{c}"]) for c in cols], axis=1), "pcd (binary)"
    if kind == "binary_compressed":
        if len(body) < 8:
            raise PointFileError(f"{where}: truncated: DATA binary_compressed has no size words")
        packed, unpacked = struct.unpack("<II", body[:8])
        if len(body) < 8 + packed:
            raise PointFileError(f"{where}: truncated: DATA binary_compressed says {packed} compressed bytes, "
                                 f"{len(body) - 8} follow")
        point_size = sum(s * c for s, c in zip(sizes, counts))
        if unpacked != n * point_size:
            raise PointFileError(f"{where}: DATA binary_compressed unpacks to {unpacked} bytes, {n} points of "
                                 f"{point_size} bytes need {n * point_size}")
        raw = lzf_decompress(body[8:8 + packed], unpacked, where)
        # Field after field (all points' x, then all y, ...), not point after point.
        out = []
        offsets = np.cumsum([0] + [n * s * c for s, c in zip(sizes, counts)][:-1])
        for c in cols:
            block = np.frombuffer(raw, dtype="<" + dtypes[c], count=n * counts[c], offset=int(offsets[c]))
            out.append(block.reshape(n, counts[c])[:, 0].astype(np.float64))
        return np.stack(out, axis=1) if n else np.zeros((0, 3)), "pcd (binary_compressed)"
    raise PointFileError(f"{where}: DATA {kind!r} is not ascii, binary or binary_compressed")


def _first(column: np.ndarray) -> np.ndarray:
    """A field's values as float64, the first of each point's when COUNT > 1."""
    return (column[:, 0] if column.ndim == 2 else column).astype(np.float64)


def lzf_decompress(data: bytes, size: int, where: str = "data") -> bytes:
    """LZF (liblzf, as PCL's binary_compressed uses it) decompressed to exactly ``size`` bytes."""
    out = bytearray()
    i, n = 0, len(data)
    while i < n:
        ctrl = data[i]
        i += 1
        if ctrl < 32:  # a literal run of ctrl + 1 bytes
            run = ctrl + 1
            if i + run > n:
                raise PointFileError(f"{where}: corrupt LZF data: a literal run past the end")
            out += data[i:i + run]
            i += run
        else:  # a back reference: length (3 bits, or 7 + a byte) and distance (5 + 8 bits)
            length = ctrl >> 5
            if length == 7:
                if i >= n:
                    raise PointFileError(f"{where}: corrupt LZF data: a back reference past the end")
                length += data[i]
                i += 1
            if i >= n:
                raise PointFileError(f"{where}: corrupt LZF data: a back reference past the end")
            ref = len(out) - ((ctrl & 0x1F) << 8) - data[i] - 1
            i += 1
            length += 2
            if ref < 0:
                raise PointFileError(f"{where}: corrupt LZF data: a back reference before the start")
            if ref + length <= len(out):
                out += out[ref:ref + length]
            else:  # overlapping: byte by byte
                for k in range(length):
                    out.append(out[ref + k])
        if len(out) > size:
            raise PointFileError(f"{where}: corrupt LZF data: more than the {size} bytes the header gives")
    if len(out) != size:
        raise PointFileError(f"{where}: truncated: LZF data unpacks to {len(out)} bytes, the header gives {size}")
    return bytes(out)


__all__ = ["read_points", "PointFile", "PointFileError", "lzf_decompress", "FORMATS"]
