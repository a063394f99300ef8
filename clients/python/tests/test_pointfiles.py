"""Point files (proximity_client.pointfiles): .npy, .ply (ascii, binary little and big endian) and .pcd
(ascii, binary, binary_compressed) written here byte by byte with NumPy and struct from known random
points, read back exactly; NaN points dropped and counted; malformed files refused naming the file and
the problem. No daemon needed."""
from __future__ import annotations

import struct
from pathlib import Path
from typing import List, Sequence, Tuple

import numpy as np
import pytest

from proximity_client.pointfiles import PointFileError, lzf_decompress, read_points


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> np.random.Generator:
    seed = sum(ord(c) * (i + 1) for i, c in enumerate(request.node.name)) % (2**32)
    return np.random.default_rng(seed)


def _points(rng: np.random.Generator, n: int = 257) -> np.ndarray:
    return rng.uniform(-3.0, 3.0, size=(n, 3))


def _f32(p: np.ndarray) -> np.ndarray:
    return p.astype(np.float32).astype(np.float64)


# ---- .npy ---------------------------------------------------------------------------------------

def test_npy_plain_wide_integer_and_structured(tmp_path: Path, rng: np.random.Generator) -> None:
    p = _points(rng)
    np.save(tmp_path / "a.npy", p)
    got = read_points(tmp_path / "a.npy")
    np.testing.assert_array_equal(got.points, p)
    assert got.nan_dropped == 0 and got.format == "npy"
    wide = np.hstack([p, rng.normal(size=(len(p), 3))]).astype(np.float32)
    np.save(tmp_path / "wide.npy", wide)
    np.testing.assert_array_equal(read_points(tmp_path / "wide.npy").points, _f32(p))
    ints = rng.integers(-1000, 1000, size=(50, 3)).astype(np.int16)
    np.save(tmp_path / "ints.npy", ints)
    np.testing.assert_array_equal(read_points(tmp_path / "ints.npy").points, ints.astype(np.float64))
    rec = np.zeros(len(p), dtype=[("intensity", "<f4"), ("z", ">f8"), ("x", "<f8"), ("y", "<f4"), ("rgb", "u4")])
    rec["x"], rec["y"], rec["z"] = p[:, 0], p[:, 1], p[:, 2]
    np.save(tmp_path / "rec.npy", rec)
    expect = np.stack([p[:, 0], _f32(p[:, 1:2])[:, 0], p[:, 2]], axis=1)
    np.testing.assert_array_equal(read_points(tmp_path / "rec.npy").points, expect)


def test_npy_nan_points_dropped_and_counted(tmp_path: Path, rng: np.random.Generator) -> None:
    p = _points(rng, 100)
    holes = rng.choice(100, size=17, replace=False)
    q = p.copy()
    q[holes, rng.integers(0, 3, size=17)] = np.nan
    np.save(tmp_path / "holes.npy", q)
    got = read_points(tmp_path / "holes.npy")
    assert got.nan_dropped == 17
    np.testing.assert_array_equal(got.points, np.delete(p, holes, axis=0))


def test_npy_refusals(tmp_path: Path) -> None:
    cases = {
        "flat.npy": np.zeros(6),
        "two.npy": np.zeros((4, 2)),
        "text.npy": np.array([["a", "b", "c"]]),
        "rec.npy": np.zeros(3, dtype=[("x", "f4"), ("y", "f4")]),
    }
    words = {"flat.npy": "shape (6,)", "two.npy": "shape (4, 2)", "text.npy": "not of numbers",
             "rec.npy": "without field(s) z"}
    for name, arr in cases.items():
        np.save(tmp_path / name, arr)
        with pytest.raises(ValueError, match=rf"{name}: .*{words[name].replace('(', '[(]').replace(')', '[)]')}"):
            read_points(tmp_path / name)
    np.save(tmp_path / "obj.npy", np.array([{"x": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError, match="obj.npy: not a readable .npy"):
        read_points(tmp_path / "obj.npy")
    np.save(tmp_path / "cut.npy", np.zeros((100, 3)))
    data = (tmp_path / "cut.npy").read_bytes()
    (tmp_path / "cut.npy").write_bytes(data[:-40])
    with pytest.raises(ValueError, match="cut.npy: not a readable .npy"):
        read_points(tmp_path / "cut.npy")
    with pytest.raises(ValueError, match="none.npy: cannot be read"):
        read_points(tmp_path / "none.npy")
    (tmp_path / "a.xyz").write_text("1 2 3\n")
    with pytest.raises(ValueError, match=r"a.xyz: not a point file \(give .npy, .ply, .pcd\)"):
        read_points(tmp_path / "a.xyz")


def test_infinite_coordinates_are_refused(tmp_path: Path) -> None:
    np.save(tmp_path / "inf.npy", np.array([[0.0, 0.0, 0.0], [1.0, np.inf, 0.0]]))
    with pytest.raises(PointFileError, match="inf.npy: 1 point.* infinite"):
        read_points(tmp_path / "inf.npy")


# ---- .ply ---------------------------------------------------------------------------------------

_STRUCT = {"char": "b", "uchar": "B", "short": "h", "ushort": "H", "int": "i", "uint": "I", "float": "f",
           "double": "d", "int8": "b", "uint8": "B", "int16": "h", "uint16": "H", "int32": "i", "uint32": "I",
           "float32": "f", "float64": "d"}


def _ply(path: Path, fmt: str, vertex_props: Sequence[Tuple[str, str]], vertices: np.ndarray,
         faces: Sequence[Sequence[int]] = (), faces_first: bool = False, extra_header: str = "") -> None:
    """A PLY file: a vertex element with the given (type, name) properties and rows, and a face element
    of vertex index lists (uchar count, int indices), before or after the vertices."""
    head = [f"ply", f"format {fmt} 1.0", "comment written by test_pointfiles", "obj_info nothing"]
    vertex_head = [f"element vertex {len(vertices)}"] + [f"property {t} {n}" for t, n in vertex_props]
    face_head = [f"element face {len(faces)}", "property list uchar int vertex_indices"] if faces else []
    head += (face_head + vertex_head) if faces_first else (vertex_head + face_head)
    head += [extra_header] if extra_header else []
    head.append("end_header")
    text = ("\n".join(head) + "\n").encode()
    if fmt == "ascii":
        def vtx() -> bytes:
            # A float property at float precision, as a writer of that type prints it.
            return "".join(" ".join(repr(float(np.float32(v))) if t in ("float", "float32") else
                                    repr(float(v)) if t in ("double", "float64") else str(int(v))
                                    for (t, _), v in zip(vertex_props, row)) + "\n" for row in vertices).encode()

        def fcs() -> bytes:
            return "".join(f"{len(f)} " + " ".join(map(str, f)) + "\n" for f in faces).encode()
    else:
        order = "<" if fmt == "binary_little_endian" else ">"
        fmt_v = order + "".join(_STRUCT[t] for t, _ in vertex_props)

        def vtx() -> bytes:
            return b"".join(struct.pack(fmt_v, *[int(v) if _STRUCT[t] not in "fd" else float(v)
                                                 for (t, _), v in zip(vertex_props, row)]) for row in vertices)

        def fcs() -> bytes:
            return b"".join(struct.pack(f"{order}B{len(f)}i", len(f), *f) for f in faces)
    body = (fcs() + vtx()) if faces_first else (vtx() + fcs())
    path.write_bytes(text + body)


def _faces(rng: np.random.Generator, n_vertices: int, n: int = 40) -> List[List[int]]:
    return [list(rng.integers(0, n_vertices, size=int(rng.integers(3, 7)))) for _ in range(n)]


@pytest.mark.parametrize("fmt", ["ascii", "binary_little_endian", "binary_big_endian"])
def test_ply_every_format_with_other_properties_and_faces(tmp_path: Path, rng: np.random.Generator, fmt: str) -> None:
    p = _points(rng)
    extras = rng.integers(0, 250, size=(len(p), 3))
    normals = rng.normal(size=(len(p), 2))
    props = [("uchar", "red"), ("double", "nx"), ("float", "x"), ("ushort", "green"), ("double", "y"),
             ("float32", "ny"), ("float64", "z"), ("uint8", "blue")]
    rows = np.column_stack([extras[:, 0], normals[:, 0], p[:, 0], extras[:, 1], p[:, 1], normals[:, 1], p[:, 2],
                            extras[:, 2]])
    expect = np.column_stack([_f32(p[:, 0]), p[:, 1], p[:, 2]])
    for first in (False, True):
        path = tmp_path / f"{fmt}{int(first)}.ply"
        _ply(path, fmt, props, rows, faces=_faces(rng, len(p)), faces_first=first)
        got = read_points(path)
        np.testing.assert_array_equal(got.points, expect)
        assert got.nan_dropped == 0 and got.format == f"ply ({fmt})"


@pytest.mark.parametrize("fmt", ["ascii", "binary_little_endian", "binary_big_endian"])
def test_ply_integer_coordinates_and_lists_in_the_vertex_element(tmp_path: Path, rng: np.random.Generator,
                                                                 fmt: str) -> None:
    ints = rng.integers(-30000, 30000, size=(60, 3))
    props = [("short", "x"), ("int", "y"), ("char", "flag"), ("int16", "z")]
    rows = np.column_stack([ints[:, 0], ints[:, 1], rng.integers(-100, 100, size=60), ints[:, 2]])
    _ply(tmp_path / "i.ply", fmt, props, rows)
    np.testing.assert_array_equal(read_points(tmp_path / "i.ply").points, ints.astype(np.float64))
    # A vertex element holding a list property (walked row by row).
    p = _points(rng, 30)
    lists = [list(rng.integers(0, 9, size=int(rng.integers(0, 4)))) for _ in range(30)]
    head = ["ply", f"format {fmt} 1.0", "element vertex 30", "property double x", "property list uchar int ids",
            "property float y", "property double z", "end_header"]
    body = b""
    for row, ids in zip(p, lists):
        if fmt == "ascii":
            body += f"{row[0]!r} {len(ids)} {' '.join(map(str, ids))} {float(np.float32(row[1]))!r} {row[2]!r}\n".encode()
        else:
            o = "<" if fmt == "binary_little_endian" else ">"
            body += struct.pack(f"{o}dB{len(ids)}ifd", row[0], len(ids), *ids, row[1], row[2])
    (tmp_path / "l.ply").write_bytes(("\n".join(head) + "\n").encode() + body)
    np.testing.assert_array_equal(read_points(tmp_path / "l.ply").points,
                                  np.column_stack([p[:, 0], _f32(p[:, 1]), p[:, 2]]))


def test_ply_nan_points_dropped(tmp_path: Path, rng: np.random.Generator) -> None:
    p = _points(rng, 50)
    p[[3, 10, 11], [0, 2, 1]] = np.nan
    for fmt in ("ascii", "binary_big_endian"):
        _ply(tmp_path / "n.ply", fmt, [("double", "x"), ("double", "y"), ("double", "z")], p)
        got = read_points(tmp_path / "n.ply")
        assert got.nan_dropped == 3
        np.testing.assert_array_equal(got.points, np.delete(p, [3, 10, 11], axis=0))


def test_ply_refusals(tmp_path: Path, rng: np.random.Generator) -> None:
    p = _points(rng, 20)
    xyz = [("float", "x"), ("float", "y"), ("float", "z")]
    _ply(tmp_path / "cut.ply", "binary_little_endian", xyz, p)
    data = (tmp_path / "cut.ply").read_bytes()
    (tmp_path / "cut.ply").write_bytes(data[:-5])
    with pytest.raises(PointFileError, match="cut.ply: truncated: element vertex needs 240 bytes"):
        read_points(tmp_path / "cut.ply")
    _ply(tmp_path / "cutf.ply", "binary_big_endian", xyz, p, faces=_faces(rng, 20), faces_first=True)
    whole = (tmp_path / "cutf.ply").read_bytes()
    (tmp_path / "cutf.ply").write_bytes(whole[:whole.index(b"end_header\n") + 11 + 30])
    with pytest.raises(PointFileError, match="cutf.ply: truncated: element face"):
        read_points(tmp_path / "cutf.ply")
    _ply(tmp_path / "cuta.ply", "ascii", xyz, p)
    text = (tmp_path / "cuta.ply").read_text()
    (tmp_path / "cuta.ply").write_text(text[:text.rindex("\n", 0, len(text) - 1)])
    with pytest.raises(PointFileError, match="cuta.ply: truncated: element vertex"):
        read_points(tmp_path / "cuta.ply")
    _ply(tmp_path / "noz.ply", "ascii", [("float", "x"), ("float", "y"), ("float", "w")], p)
    with pytest.raises(PointFileError, match=r"noz.ply: the vertex element has no z property \(it has x, y, w\)"):
        read_points(tmp_path / "noz.ply")
    (tmp_path / "nov.ply").write_bytes(b"ply\nformat ascii 1.0\nelement point 1\nproperty float x\nend_header\n1\n")
    with pytest.raises(PointFileError, match=r"nov.ply: no vertex element \(elements: point\)"):
        read_points(tmp_path / "nov.ply")
    (tmp_path / "fmt.ply").write_bytes(b"ply\nformat binary_middle_endian 1.0\nelement vertex 0\nend_header\n")
    with pytest.raises(PointFileError, match="fmt.ply: header line 2: unknown format"):
        read_points(tmp_path / "fmt.ply")
    (tmp_path / "noend.ply").write_bytes(b"ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\n")
    with pytest.raises(PointFileError, match="noend.ply: the header has no end_header line"):
        read_points(tmp_path / "noend.ply")
    (tmp_path / "type.ply").write_bytes(b"ply\nformat ascii 1.0\nelement vertex 1\nproperty quad x\nend_header\n")
    with pytest.raises(PointFileError, match="type.ply: header line 4: unknown property"):
        read_points(tmp_path / "type.ply")
    (tmp_path / "word.ply").write_bytes(b"ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nproperty float y\n"
                                        b"property float z\nend_header\n1 2 zz\n")
    with pytest.raises(PointFileError, match="word.ply: element vertex: could not convert"):
        read_points(tmp_path / "word.ply")
    (tmp_path / "obj.ply").write_bytes(b"solid x\nendsolid\n")
    with pytest.raises(PointFileError, match="obj.ply: not a PLY file"):
        read_points(tmp_path / "obj.ply")


# ---- .pcd ---------------------------------------------------------------------------------------

_PCD_CODE = {("F", 4): "f", ("F", 8): "d", ("I", 1): "b", ("I", 2): "h", ("I", 4): "i", ("U", 1): "B",
             ("U", 2): "H", ("U", 4): "I", ("U", 8): "Q", ("I", 8): "q"}


def _pcd_header(fields: Sequence[Tuple[str, int, str, int]], width: int, height: int, data: str,
                points: int = -1) -> bytes:
    return ("# .PCD v0.7 - Point Cloud Data file format\nVERSION 0.7\n"
            f"FIELDS {' '.join(f[0] for f in fields)}\nSIZE {' '.join(str(f[1]) for f in fields)}\n"
            f"TYPE {' '.join(f[2] for f in fields)}\nCOUNT {' '.join(str(f[3]) for f in fields)}\n"
            f"WIDTH {width}\nHEIGHT {height}\nVIEWPOINT 0 0 0 1 0 0 0\n"
            f"POINTS {width * height if points < 0 else points}\nDATA {data}\n").encode()


# x y z with an rgb packed in a float, an intensity, a 3-value normal and a 33-value histogram around them.
_FIELDS = [("rgb", 4, "F", 1), ("x", 4, "F", 1), ("intensity", 2, "U", 1), ("normal", 4, "F", 3), ("y", 8, "F", 1),
           ("fpfh", 4, "F", 33), ("z", 4, "F", 1), ("ring", 1, "I", 1), ("stamp", 8, "U", 1)]


def _pcd_values(rng: np.random.Generator, p: np.ndarray) -> List[List[float]]:
    """Each point's values field by field (COUNT values each), x y z where the fields say."""
    rows = []
    for x, y, z in p:
        row: List[float] = []
        for name, size, kind, count in _FIELDS:
            if name in "xyz":
                row.append({"x": x, "y": y, "z": z}[name])
            elif kind == "F":
                row += list(rng.normal(size=count))
            else:
                row += list(rng.integers(0, 100, size=count))
        rows.append(row)
    return rows


def _expect(p: np.ndarray) -> np.ndarray:
    return np.column_stack([_f32(p[:, 0]), p[:, 1], _f32(p[:, 2])])


def _pcd_binary_rows(rows: List[List[float]]) -> bytes:
    code = "<" + "".join(_PCD_CODE[(k, s)] * c for _, s, k, c in _FIELDS)
    return b"".join(struct.pack(code, *[v if "f" in fmt or "d" in fmt else int(v) for fmt, v in
                                        zip([c for c in code[1:]], row)]) for row in rows)


def _lzf_compress(data: bytes) -> bytes:
    """A greedy LZF encoder (literal runs and back references), written from liblzf's format."""
    out, lit, table, i = bytearray(), bytearray(), {}, 0

    def flush() -> None:
        while lit:
            chunk = lit[:32]
            out.append(len(chunk) - 1)
            out.extend(chunk)
            del lit[:32]
    while i < len(data):
        key = data[i:i + 3]
        ref = table.get(key) if len(key) == 3 else None
        if len(key) == 3:
            table[key] = i
        if ref is not None and i - ref - 1 < 8192:
            length = 3
            while i + length < len(data) and length < 264 and data[ref + length] == data[i + length]:
                length += 1
            flush()
            off, code = i - ref - 1, length - 2
            if code < 7:
                out.append((code << 5) | (off >> 8))
            else:
                out += bytes([(7 << 5) | (off >> 8), code - 7])
            out.append(off & 0xFF)
            i += length
        else:
            lit.append(data[i])
            i += 1
    flush()
    return bytes(out)


def test_lzf_round_trip(rng: np.random.Generator) -> None:
    for data in (b"", b"a", b"abcabcabcabcabcabc" * 50, bytes(rng.integers(0, 4, size=5000, dtype=np.uint8)),
                 bytes(rng.integers(0, 256, size=3000, dtype=np.uint8)), b"\0" * 10000):
        packed = _lzf_compress(data)
        assert lzf_decompress(packed, len(data)) == data
    assert len(_lzf_compress(b"\0" * 10000)) < 200  # back references were exercised
    with pytest.raises(PointFileError, match="corrupt LZF data: a back reference before the start"):
        lzf_decompress(bytes([0x20, 0x05]), 10)


@pytest.mark.parametrize("data", ["ascii", "binary", "binary_compressed"])
def test_pcd_every_data_kind_with_extra_fields(tmp_path: Path, rng: np.random.Generator, data: str) -> None:
    p = _points(rng, 120)
    rows = _pcd_values(rng, p)
    path = tmp_path / f"{data}.pcd"
    if data == "ascii":
        text = []
        for row in rows:
            values, col = [], 0
            for _name, size, kind, count in _FIELDS:  # F 4 fields at float precision, as PCL prints them
                values += [repr(float(np.float32(v))) if (kind, size) == ("F", 4) else repr(float(v)) if kind == "F"
                           else str(int(v)) for v in row[col:col + count]]
                col += count
            text.append(" ".join(values) + "\n")
        body = "".join(text).encode()
    elif data == "binary":
        body = _pcd_binary_rows(rows)
    else:
        # Field after field: every point's rgb, then every point's x, ...
        raw = b""
        col = 0
        for _name, size, kind, count in _FIELDS:
            fmt = "<" + _PCD_CODE[(kind, size)] * (count * len(rows))
            values = [row[col + k] for row in rows for k in range(count)]
            raw += struct.pack(fmt, *[v if kind == "F" else int(v) for v in values])
            col += count
        packed = _lzf_compress(raw)
        body = struct.pack("<II", len(packed), len(raw)) + packed
    path.write_bytes(_pcd_header(_FIELDS, 40, 3, data) + body)
    got = read_points(path)
    assert got.format == f"pcd ({data})" and got.nan_dropped == 0
    np.testing.assert_array_equal(got.points, _expect(p))


@pytest.mark.parametrize("data", ["ascii", "binary"])
def test_pcd_organized_cloud_nan_holes(tmp_path: Path, rng: np.random.Generator, data: str) -> None:
    fields = [("x", 4, "F", 1), ("y", 4, "F", 1), ("z", 4, "F", 1), ("rgb", 4, "U", 1)]
    p = _f32(_points(rng, 64))
    holes = [0, 5, 6, 63]
    p[holes] = np.nan
    rows = [[*row, 7] for row in p]
    if data == "ascii":
        body = "".join(" ".join("nan" if np.isnan(v) else repr(float(v)) for v in row[:3]) + f" {row[3]}\n"
                       for row in rows).encode()
    else:
        body = b"".join(struct.pack("<fffI", *row[:3], 7) for row in rows)
    (tmp_path / "o.pcd").write_bytes(_pcd_header(fields, 8, 8, data) + body)
    got = read_points(tmp_path / "o.pcd")
    assert got.nan_dropped == 4
    np.testing.assert_array_equal(got.points, np.delete(p, holes, axis=0))


def test_pcd_refusals(tmp_path: Path, rng: np.random.Generator) -> None:
    xyz = [("x", 4, "F", 1), ("y", 4, "F", 1), ("z", 4, "F", 1)]
    body = b"".join(struct.pack("<fff", *row) for row in _points(rng, 10))

    def refused(name: str, content: bytes, message: str) -> None:
        (tmp_path / name).write_bytes(content)
        with pytest.raises(PointFileError, match=f"{name}: {message}"):
            read_points(tmp_path / name)

    refused("cut.pcd", _pcd_header(xyz, 10, 1, "binary") + body[:-3],
            "truncated: DATA binary holds 117 bytes, 10 points of 12 bytes need 120")
    refused("long.pcd", _pcd_header(xyz, 10, 1, "binary") + body + b"\0" * 12,
            "DATA binary holds 132 bytes")
    refused("count.pcd", _pcd_header(xyz, 10, 1, "binary", points=11) + body,
            r"POINTS 11 but WIDTH x HEIGHT = 10 x 1 = 10")
    header = _pcd_header(xyz, 10, 1, "binary").replace(b"FIELDS x y z\n", b"")
    refused("nofields.pcd", header + body, "the header has no FIELDS line")
    refused("nosize.pcd", _pcd_header(xyz, 10, 1, "binary").replace(b"SIZE 4 4 4\n", b"") + body,
            "the header has no SIZE line")
    refused("sizes.pcd", _pcd_header(xyz, 10, 1, "binary").replace(b"SIZE 4 4 4", b"SIZE 4 4") + body,
            "3 FIELDS but 2 SIZE values")
    refused("noz.pcd", _pcd_header([("x", 4, "F", 1), ("y", 4, "F", 1), ("w", 4, "F", 1)], 10, 1, "binary") + body,
            r"no field\(s\) z \(FIELDS x y w\)")
    refused("type.pcd", _pcd_header([("x", 4, "F", 1), ("y", 4, "F", 1), ("z", 2, "F", 1)], 10, 1, "binary") + body,
            "field z: TYPE F with SIZE 2 is not a number type")
    refused("ascii.pcd", _pcd_header(xyz, 10, 1, "ascii") + b"1 2 3\n" * 9 + b"1 2\n",
            "truncated: DATA ascii holds 29 values, 10 points of 3 values need 30")
    refused("kind.pcd", _pcd_header(xyz, 10, 1, "binary_zstd") + body,
            "DATA 'binary_zstd' is not ascii, binary or binary_compressed")
    refused("nodata.pcd", _pcd_header(xyz, 10, 1, "binary").split(b"DATA")[0], "the header has no DATA line")
    refused("word.pcd", _pcd_header(xyz, 1, 1, "ascii") + b"1 2 three\n", "DATA ascii: could not convert")
    refused("width.pcd", _pcd_header(xyz, 10, 1, "binary").replace(b"WIDTH 10", b"WIDTH ten") + body,
            "WIDTH 'ten': not integers")
    raw = body
    packed = _lzf_compress(raw)
    refused("zcut.pcd", _pcd_header(xyz, 10, 1, "binary_compressed") + struct.pack("<II", len(packed), len(raw))
            + packed[:-4], "truncated: DATA binary_compressed says")
    refused("zsize.pcd", _pcd_header(xyz, 10, 1, "binary_compressed") + struct.pack("<II", len(packed), 100)
            + packed, "DATA binary_compressed unpacks to 100 bytes, 10 points of 12 bytes need 120")
    refused("zbad.pcd", _pcd_header(xyz, 10, 1, "binary_compressed") + struct.pack("<II", len(packed), 120)
            + packed[:len(packed) // 2] + b"\x1f" * (len(packed) - len(packed) // 2), "corrupt LZF data|truncated")
