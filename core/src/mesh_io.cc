#include <assimp/Importer.hpp>
#include <assimp/postprocess.h>
#include <assimp/scene.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <new>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "proximity/core/mesh.h"

namespace proximity::core {
namespace {

// Degenerate triangles are left in on purpose (no aiProcess_FindDegenerates, which turns them into lines):
// MakeTriangleMesh removes and counts them.
constexpr unsigned kPostProcess = aiProcess_Triangulate | aiProcess_JoinIdenticalVertices | aiProcess_SortByPType;

/// An affine map p -> A p + t.
struct Affine {
  Mat3 A = Mat3::Identity();
  Vec3 t = Vec3::Zero();

  Affine operator*(const Affine& o) const { return {A * o.A, A * o.t + t}; }
  Vec3 operator*(const Vec3& p) const { return A * p + t; }
};

Affine ToAffine(const aiMatrix4x4& m) {
  Affine x;
  x.A << m.a1, m.a2, m.a3, m.b1, m.b2, m.b3, m.c1, m.c2, m.c3;
  x.t << m.a4, m.b4, m.c4;
  return x;
}

std::string FormatVec(const Vec3& v) {
  std::ostringstream os;
  os << "(" << v.x() << ", " << v.y() << ", " << v.z() << ")";
  return os.str();
}

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

/// Whether assimp read the scene with its COLLADA importer; the extension decides if the scene does not say.
bool IsCollada(const aiScene& scene, const std::string& extension) {
  aiString format;
  if (scene.mMetaData != nullptr && scene.mMetaData->Get("SourceAsset_Format", format)) {
    return Lower(format.C_Str()).find("collada") != std::string::npos;
  }
  return extension == "dae" || extension == "zae";
}

/// The transform the scene's root node should apply. For COLLADA, assimp's root node carries the declared
/// unit (<unit meter>) times a rotation from the file's up axis into +Y; the rotation is dropped so the
/// geometry keeps its own axes, and the unit scale is kept.
Affine RootTransform(const aiScene& scene, const std::string& extension) {
  const Affine root = ToAffine(scene.mRootNode->mTransformation);
  if (!IsCollada(scene, extension)) return root;
  Affine unit;
  unit.A = Mat3::Identity() * root.A.col(0).norm();
  return unit;
}

struct Gathered {
  std::vector<Vec3> vertices;
  std::vector<std::array<int32_t, 3>> triangles;
  int32_t submeshes = 0;
  int32_t skipped_non_triangles = 0;
};

/// Appends the triangles of every mesh instance in the node tree, with the node transform chain and then the
/// per-axis scale applied to its vertices. Mirroring transforms get their triangles' winding reversed so that
/// the triangles stay counter-clockwise seen from outside.
Result<Gathered> GatherTriangles(const aiScene& scene, const Affine& X_root, const Vec3& scale,
                                 const std::string& label) {
  Gathered out;
  std::vector<std::pair<const aiNode*, Affine>> stack = {{scene.mRootNode, X_root}};
  const bool scale_mirrors = (scale.array() < 0.0).count() % 2 == 1;
  while (!stack.empty()) {
    const auto [node, X_MN] = stack.back();
    stack.pop_back();
    for (unsigned c = 0; c < node->mNumChildren; ++c) {
      if (node->mChildren[c] != nullptr) {
        stack.emplace_back(node->mChildren[c], X_MN * ToAffine(node->mChildren[c]->mTransformation));
      }
    }
    const bool mirrored = (X_MN.A.determinant() < 0) != scale_mirrors;
    for (unsigned k = 0; k < node->mNumMeshes; ++k) {
      const unsigned mesh_index = node->mMeshes[k];
      if (mesh_index >= scene.mNumMeshes || scene.mMeshes[mesh_index] == nullptr) {
        return ParseError(label + ": node '" + node->mName.C_Str() + "' refers to missing submesh " +
                          std::to_string(mesh_index));
      }
      const aiMesh& mesh = *scene.mMeshes[mesh_index];
      const size_t base = out.vertices.size();
      const size_t triangles_before = out.triangles.size();
      for (unsigned f = 0; f < mesh.mNumFaces; ++f) {
        const aiFace& face = mesh.mFaces[f];
        if (face.mNumIndices != 3) {
          ++out.skipped_non_triangles;
          continue;
        }
        std::array<int32_t, 3> t;
        for (int i = 0; i < 3; ++i) {
          if (face.mIndices[i] >= mesh.mNumVertices) {
            return ParseError(label + ": face " + std::to_string(f) + " of submesh " + std::to_string(mesh_index) +
                              " has vertex index " + std::to_string(face.mIndices[i]) + " out of range");
          }
          t[i] = static_cast<int32_t>(base + face.mIndices[i]);
        }
        if (mirrored) std::swap(t[1], t[2]);
        out.triangles.push_back(t);
      }
      if (out.triangles.size() == triangles_before) continue;
      if (base + mesh.mNumVertices > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
        return Error{ErrorCode::kResourceExhausted, label + ": too many vertices for 32-bit indices"};
      }
      ++out.submeshes;
      for (unsigned v = 0; v < mesh.mNumVertices; ++v) {
        const aiVector3D& p = mesh.mVertices[v];
        const Vec3 p_N(p.x, p.y, p.z);
        const std::string which = "vertex " + std::to_string(v) + " of submesh " + std::to_string(mesh_index);
        if (!p_N.allFinite()) {
          return ParseError(label + ": " + which + " has a non-finite coordinate " + FormatVec(p_N));
        }
        const Vec3 p_M = scale.cwiseProduct(X_MN * p_N);
        if (!p_M.allFinite()) {
          return ParseError(label + ": " + which + " " + FormatVec(p_N) +
                            " is not finite after the node transforms and scale: " + FormatVec(p_M));
        }
        out.vertices.push_back(p_M);
      }
    }
  }
  return out;
}

Status ValidateOptions(const MeshLoadOptions& options, const std::string& label) {
  if (!options.scale.allFinite() || (options.scale.array() == 0.0).any()) {
    return InvalidArgument(label + ": scale components must be finite and non-zero, got " + FormatVec(options.scale));
  }
  if (!std::isfinite(options.weld_tolerance) || options.weld_tolerance < 0.0) {
    std::ostringstream os;
    os << label << ": weld tolerance must be finite and >= 0, got " << options.weld_tolerance;
    return InvalidArgument(os.str());
  }
  return Status::Ok();
}

/// Turns an imported scene into one cleaned TriangleMesh.
Result<TriangleMesh> FromScene(const aiScene* scene, const Assimp::Importer& importer, const std::string& extension,
                               const MeshLoadOptions& options, const std::string& label, MeshLoadReport* report) {
  if (scene == nullptr) return ParseError("cannot parse " + label + ": " + importer.GetErrorString());
  if (scene->mRootNode == nullptr) return ParseError(label + " has no triangles (the file holds no scene)");
  auto gathered = GatherTriangles(*scene, RootTransform(*scene, extension), options.scale, label);
  if (!gathered.ok()) return gathered.error();
  Gathered& g = gathered.value();
  if (g.triangles.empty()) {
    std::string message = label + " has no triangles";
    if (g.skipped_non_triangles > 0) {
      message += " (only " + std::to_string(g.skipped_non_triangles) + " point or line elements)";
    }
    return ParseError(message);
  }
  MeshLoadReport cleaning;
  auto mesh = MakeTriangleMesh(std::move(g.vertices), std::move(g.triangles), options.weld_tolerance, &cleaning);
  if (!mesh.ok()) return ParseError(label + ": " + mesh.error().message);
  if (report != nullptr) {
    report->submeshes = g.submeshes;
    report->skipped_non_triangles = g.skipped_non_triangles;
    report->removed_degenerate = cleaning.removed_degenerate;
    report->welded_vertices = cleaning.welded_vertices;
  }
  return mesh;
}

/// Runs `load`, turning anything thrown into an Error.
template <class Load>
Result<TriangleMesh> NoThrow(const std::string& label, Load&& load) {
  try {
    return load();
  } catch (const std::bad_alloc&) {
    return Error{ErrorCode::kResourceExhausted, "out of memory while loading " + label};
  } catch (const std::exception& e) {
    return ParseError("cannot parse " + label + ": " + e.what());
  } catch (...) {
    return ParseError("cannot parse " + label + ": unknown exception");
  }
}

}  // namespace

Result<TriangleMesh> LoadMesh(const std::string& path, const MeshLoadOptions& options, MeshLoadReport* report) {
  const std::string label = "mesh file " + path;
  return NoThrow(label, [&]() -> Result<TriangleMesh> {
    if (Status s = ValidateOptions(options, label); !s.ok()) return s.error();
    std::error_code ec;
    const auto status = std::filesystem::status(path, ec);
    if (!std::filesystem::exists(status)) return NotFound("mesh file not found: " + path);
    if (std::filesystem::is_directory(status)) return ParseError(label + " is a directory, not a mesh file");
    if (!std::ifstream(path, std::ios::binary).good()) return ParseError("cannot open " + label);
    const auto size = std::filesystem::file_size(path, ec);
    if (!ec && size == 0) return ParseError(label + " is empty");

    Assimp::Importer importer;
    const aiScene* scene = importer.ReadFile(path, kPostProcess);
    const std::string extension = Lower(std::filesystem::path(path).extension().string());
    return FromScene(scene, importer, extension.empty() ? extension : extension.substr(1), options, label, report);
  });
}

Result<TriangleMesh> LoadMeshFromMemory(const std::string& bytes, const std::string& format_hint,
                                        const std::string& name, const MeshLoadOptions& options,
                                        MeshLoadReport* report) {
  const std::string label = "mesh " + name;
  return NoThrow(label, [&]() -> Result<TriangleMesh> {
    if (Status s = ValidateOptions(options, label); !s.ok()) return s.error();
    if (bytes.empty()) return ParseError(label + " is empty");
    std::string hint = Lower(format_hint);
    if (!hint.empty() && hint.front() == '.') hint.erase(0, 1);
    Assimp::Importer importer;
    const aiScene* scene = importer.ReadFileFromMemory(bytes.data(), bytes.size(), kPostProcess, hint.c_str());
    return FromScene(scene, importer, hint, options, label, report);
  });
}

}  // namespace proximity::core
