#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets into tests/fuzz/corpus/<target>/.

Sources: the repository's fixtures (tests/data), the hand-written seeds in tests/fuzz/seeds/ (service
requests as text protos, encoded here with protoc), and a few meshes generated below. Run from anywhere;
the output is deterministic, so a re-run changes nothing unless a source changed.

    tests/fuzz/make_corpus.py
"""
import pathlib
import struct
import subprocess

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
DATA = ROOT / "tests" / "data"
SEEDS = HERE / "seeds"
CORPUS = HERE / "corpus"

# mesh_fuzz's first byte: format in bits 0-1 (stl, obj, ply, dae), bit 2 welds, bit 3 mirrors.
FORMATS = {"stl": 0, "obj": 1, "ply": 2, "dae": 3}
# service_fuzz's first byte: the RPC, in server::Rpc's order.
RPCS = ["CreateScene", "GetScene", "ListScenes", "UpdateWorld", "DeleteScene", "CheckState", "CheckStates",
        "ComputeDistance", "CheckMotion", "CheckPath", "ValidatePaths", "TimeOfFirstContact", "Plan",
        "GetLinkPoses", "GetSceneGeometry", "Session", "ComputeContacts", "ComputeSignedDistance", "NameScene", "GetIK"]
# A Session seed holds the stream's requests separated by lines of "---"; the target reads them as
# length-delimited messages (a varint byte count before each).
SESSION = RPCS.index("Session")

TETRA = [(0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1)]
TETRA_FACES = [(0, 2, 1), (0, 1, 3), (0, 3, 2), (1, 2, 3)]
CUBE = [(x, y, z) for x in (0, 1) for y in (0, 1) for z in (0, 1)]
CUBE_QUADS = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]


def encode(message, text):
    """A text-format proximity.v1 message in its binary encoding (protoc --encode)."""
    proto_dir = ROOT / "proto"
    return subprocess.run(
        ["protoc", "-I", str(proto_dir), "--encode=proximity.v1." + message,
         str(proto_dir / "proximity" / "v1" / "proximity.proto")],
        input=text.encode(), stdout=subprocess.PIPE, check=True).stdout


def varint(n):
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def binary_stl(vertices, faces):
    out = bytearray(b"binary stl written for the fuzz corpus".ljust(80, b" "))
    out += struct.pack("<I", len(faces))
    for f in faces:
        out += struct.pack("<3f", 0, 0, 0)
        for i in f:
            out += struct.pack("<3f", *vertices[i])
        out += struct.pack("<H", 0)
    return bytes(out)


def obj_cube():
    lines = ["# cube with normals, texture coordinates, a group and negative indices", "o cube", "g sides"]
    lines += ["v %g %g %g" % v for v in CUBE]
    lines += ["vn 0 0 1", "vt 0 0", "vt 1 0", "vt 1 1"]
    for q in CUBE_QUADS[:3]:
        lines.append("f " + " ".join("%d/1/1" % (i + 1) for i in q))
    for q in CUBE_QUADS[3:]:
        lines.append("f " + " ".join("%d" % (i - 8) for i in q))
    return ("\n".join(lines) + "\n").encode()


def binary_ply(little):
    e = "<" if little else ">"
    header = ("ply\nformat binary_%s_endian 1.0\ncomment fuzz seed\nelement vertex %d\nproperty float x\n"
              "property float y\nproperty float z\nelement face %d\nproperty list uchar int vertex_indices\n"
              "end_header\n" % ("little" if little else "big", len(TETRA), len(TETRA_FACES))).encode()
    body = b"".join(struct.pack(e + "3f", *v) for v in TETRA)
    body += b"".join(struct.pack(e + "B3i", 3, *f) for f in TETRA_FACES)
    return header + body


def ascii_ply_quads():
    lines = ["ply", "format ascii 1.0", "element vertex 8", "property double x", "property double y",
             "property double z", "element face 6", "property list uchar uint vertex_index", "end_header"]
    lines += ["%g %g %g" % v for v in CUBE]
    lines += ["4 " + " ".join(str(i) for i in q) for q in CUBE_QUADS]
    return ("\n".join(lines) + "\n").encode()


def collada_tetra():
    positions = " ".join("%g %g %g" % v for v in TETRA)
    indices = " ".join(str(i) for f in TETRA_FACES for i in f)
    return ("""<?xml version="1.0" encoding="utf-8"?>
<COLLADA xmlns="http://www.collada.org/2005/11/COLLADASchema" version="1.4.1">
  <asset><unit name="centimeter" meter="0.01"/><up_axis>Y_UP</up_axis></asset>
  <library_geometries>
    <geometry id="tet" name="tet"><mesh>
      <source id="tet-pos"><float_array id="tet-pos-array" count="12">%s</float_array>
        <technique_common><accessor source="#tet-pos-array" count="4" stride="3">
          <param name="X" type="float"/><param name="Y" type="float"/><param name="Z" type="float"/>
        </accessor></technique_common></source>
      <vertices id="tet-vtx"><input semantic="POSITION" source="#tet-pos"/></vertices>
      <triangles count="4"><input semantic="VERTEX" source="#tet-vtx" offset="0"/><p>%s</p></triangles>
      <polylist count="1"><input semantic="VERTEX" source="#tet-vtx" offset="0"/><vcount>4</vcount><p>0 1 2 3</p></polylist>
    </mesh></geometry>
  </library_geometries>
  <library_visual_scenes><visual_scene id="scene">
    <node id="a"><matrix>1 0 0 1 0 1 0 0 0 0 1 0 0 0 0 1</matrix><instance_geometry url="#tet"/>
      <node id="b"><scale>-1 1 1</scale><instance_geometry url="#tet"/></node></node>
  </visual_scene></library_visual_scenes>
  <scene><instance_visual_scene url="#scene"/></scene>
</COLLADA>
""" % (positions, indices)).encode()


def write(target, name, data):
    d = CORPUS / target
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(data)


def main():
    # Everything it wrote before goes; the regression seeds (regression_*, inputs that once failed) stay.
    if CORPUS.exists():
        for f in CORPUS.glob("*/*"):
            if f.is_file() and not f.name.startswith("regression_"):
                f.unlink()

    for f in sorted(DATA.iterdir()):
        ext = f.suffix.lstrip(".")
        if f.is_file() and ext in FORMATS:
            write("mesh_fuzz", f.name, bytes([FORMATS[ext]]) + f.read_bytes())
    generated = {
        "tetra_binary.stl": binary_stl(TETRA, TETRA_FACES),
        "cube.obj": obj_cube(),
        "tetra_le.ply": binary_ply(True),
        "tetra_be.ply": binary_ply(False),
        "cube_quads.ply": ascii_ply_quads(),
        "tetra.dae": collada_tetra(),
    }
    for name, data in generated.items():
        write("mesh_fuzz", name, bytes([FORMATS[name.rsplit(".", 1)[1]]]) + data)
    # The same ASCII STL welded and mirrored.
    write("mesh_fuzz", "tetrahedron_weld_mirror.stl", bytes([FORMATS["stl"] | 4 | 8]) + (DATA / "tetrahedron.stl").read_bytes())

    for f in sorted((DATA / "robots").glob("*.urdf")) + sorted((SEEDS / "urdf").glob("*.urdf")):
        write("urdf_fuzz", f.name, f.read_bytes())
    for f in sorted((DATA / "robots").glob("*.srdf")) + sorted((SEEDS / "srdf").glob("*.srdf")):
        write("srdf_fuzz", f.name, f.read_bytes())
    for f in sorted((SEEDS / "mbm").glob("*.yaml")):
        write("mbm_fuzz", f.name, f.read_bytes())

    for f in sorted((SEEDS / "service").glob("*.txtpb")):
        rpc = int(f.name[:2])
        if rpc == SESSION:
            messages = [encode("SessionRequest", part) for part in f.read_text().split("\n---\n")]
            encoded = b"".join(varint(len(m)) + m for m in messages)
        else:
            encoded = encode(RPCS[rpc] + "Request", f.read_text())
        write("service_fuzz", f.stem, bytes([rpc]) + encoded)


if __name__ == "__main__":
    main()
