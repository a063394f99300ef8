#include <assimp/BaseImporter.h>
#include <assimp/IOStream.hpp>
#include <assimp/IOSystem.hpp>
#include <assimp/Importer.hpp>
#include <assimp/commonMetaData.h>
#include <assimp/postprocess.h>
#include <assimp/scene.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <new>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <unordered_map>
#include <vector>

#include "mesh_read.h"
#include "proximity/core/mesh/mesh.h"

namespace proximity::core {
namespace internal {

void SplitWords(std::string_view line, std::vector<std::string_view>* words) {
  words->clear();
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    const size_t start = i;
    while (i < line.size() && !std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    if (i > start) words->push_back(line.substr(start, i - start));
  }
}

}  // namespace internal

namespace {

using internal::FormatVec;
using internal::Gathered;
using internal::ReadObj;
using internal::SplitWords;

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

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

/// Whether assimp read the scene with its COLLADA importer; the extension decides if the scene does not say.
bool IsCollada(const aiScene& scene, const std::string& extension) {
  aiString format;
  if (scene.mMetaData != nullptr && scene.mMetaData->Get(AI_METADATA_SOURCE_FORMAT, format)) {
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

// ----------------------------------------------------------------------------------------------------------
// PLY structure check. assimp 5.2.5 loops forever on a PLY header without end_header, reads out of bounds
// on truncated bodies and on face indices out of range, and aborts on a face without indices, so PLY input
// is walked once before assimp sees it.

struct PlyType {
  std::string_view name, alias;
  int size;
  bool is_float;
  bool is_signed;
};
constexpr PlyType kPlyTypes[] = {
    {"char", "int8", 1, false, true},   {"uchar", "uint8", 1, false, false}, {"short", "int16", 2, false, true},
    {"ushort", "uint16", 2, false, false}, {"int", "int32", 4, false, true}, {"uint", "uint32", 4, false, false},
    {"float", "float32", 4, true, true},  {"double", "float64", 8, true, true}};

const PlyType* FindPlyType(std::string_view name) {
  for (const PlyType& t : kPlyTypes) {
    if (name == t.name || name == t.alias) return &t;
  }
  return nullptr;
}

struct PlyProperty {
  const PlyType* count_type = nullptr;  ///< Non-null for a list.
  const PlyType* type = nullptr;
  bool is_index_list = false;
};

struct PlyElement {
  std::string name;
  uint64_t count = 0;
  std::vector<PlyProperty> properties;
};

/// Reads lines one at a time; the last line need not end with a newline.
class LineReader {
 public:
  explicit LineReader(std::string_view bytes) : bytes_(bytes) {}
  std::optional<std::string_view> Next() {
    if (pos_ >= bytes_.size()) return std::nullopt;
    size_t end = bytes_.find('\n', pos_);
    if (end == std::string_view::npos) end = bytes_.size();
    std::string_view line = bytes_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return line;
  }
  size_t position() const { return std::min(pos_, bytes_.size()); }

 private:
  std::string_view bytes_;
  size_t pos_ = 0;
};

/// A value read from the body; `integer` is set for integral types.
struct PlyValue {
  bool ok = false;
  int64_t integer = 0;
};

PlyValue ParseAsciiValue(std::string_view word, const PlyType& type) {
  PlyValue v;
  if (type.is_float) {
    double d;
    const auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), d);
    v.ok = ec == std::errc() && end == word.data() + word.size();
    return v;
  }
  const auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), v.integer);
  v.ok = ec == std::errc() && end == word.data() + word.size();
  return v;
}

PlyValue ReadBinaryValue(std::string_view bytes, size_t pos, const PlyType& type, bool little_endian) {
  PlyValue v;
  v.ok = true;
  if (type.is_float) return v;
  uint64_t u = 0;
  for (int b = 0; b < type.size; ++b) {
    const int shift = 8 * (little_endian ? b : type.size - 1 - b);
    u |= uint64_t{static_cast<unsigned char>(bytes[pos + b])} << shift;
  }
  if (type.is_signed && (u >> (8 * type.size - 1)) != 0) u |= ~uint64_t{0} << (8 * type.size);
  v.integer = static_cast<int64_t>(u);
  return v;
}

/// A face with no vertex index: assimp 5.2.5's triangulation asserts (aborts the process) on one.
std::string EmptyIndexList(const PlyElement& e, uint64_t i) {
  return "PLY " + e.name + " " + std::to_string(i) + " has no vertex indices";
}

/// Reads a PLY header after its 'ply' line up to end_header: *format and *elements. Returns why it is
/// unusable, or nullopt.
std::optional<std::string> ReadPlyHeader(LineReader& lines, std::string* format, std::vector<PlyElement>* elements) {
  std::vector<std::string_view> words;
  bool ended = false;
  while (auto line = lines.Next()) {
    SplitWords(*line, &words);
    if (words.empty() || words[0] == "comment" || words[0] == "obj_info") continue;
    if (words[0] == "end_header") {
      ended = true;
      break;
    }
    if (words[0] == "format" && words.size() == 3) {
      if (!format->empty()) return std::string("PLY header declares its format twice");
      *format = words[1];
    } else if (words[0] == "element" && words.size() == 3) {
      PlyElement e;
      e.name = words[1];
      // assimp 5.2.5 sizes its vertex and face arrays by the first vertex and face (or tristrips) element
      // and writes every later one's past their ends (heap corruption mesh_fuzz found): one of each only.
      for (const PlyElement& seen : *elements) {
        const auto faces = [](std::string_view n) { return n == "face" || n == "tristrips"; };
        if ((e.name == "vertex" && seen.name == "vertex") || (faces(e.name) && faces(seen.name))) {
          return "PLY header declares a second " + e.name + " element (after " + seen.name + "); one of each only";
        }
      }
      const auto [end, ec] = std::from_chars(words[2].data(), words[2].data() + words[2].size(), e.count);
      if (ec != std::errc() || end != words[2].data() + words[2].size()) {
        return "PLY element '" + e.name + "' has a bad count '" + std::string(words[2]) + "'";
      }
      elements->push_back(std::move(e));
    } else if (words[0] == "property" && !elements->empty() && words.size() >= 3) {
      PlyProperty p;
      const bool is_list = words[1] == "list";
      if (is_list ? words.size() != 5 : words.size() != 3) return "bad PLY property line '" + std::string(*line) + "'";
      p.type = FindPlyType(words[is_list ? 3 : 1]);
      if (is_list) p.count_type = FindPlyType(words[2]);
      if (p.type == nullptr || (is_list && (p.count_type == nullptr || p.count_type->is_float))) {
        return "bad PLY property type in '" + std::string(*line) + "'";
      }
      const std::string_view name = words.back();
      p.is_index_list = is_list && (name == "vertex_indices" || name == "vertex_index");
      if (p.is_index_list && p.type->is_float) return "PLY vertex index list of a floating-point type";
      elements->back().properties.push_back(p);
    } else {
      return "unexpected PLY header line '" + std::string(*line) + "'";
    }
  }
  if (!ended) return std::string("PLY header has no end_header line");
  if (*format != "ascii" && *format != "binary_little_endian" && *format != "binary_big_endian") {
    return "PLY format '" + *format + "' is not ascii, binary_little_endian or binary_big_endian";
  }
  return std::nullopt;
}

/// A PLY body's checks: face indices in range of the vertex count, and where the data ends too soon.
struct PlyBodyCheck {
  int64_t num_vertices = 0;
  std::optional<std::string> Index(const PlyElement& e, const PlyValue& v) const {
    const int64_t lowest = e.name == "tristrips" ? -1 : 0;
    if (v.integer < lowest || v.integer >= num_vertices) {
      return "PLY " + e.name + " index " + std::to_string(v.integer) + " is out of range [0, " +
             std::to_string(num_vertices) + ")";
    }
    return std::nullopt;
  }
  static std::string Truncated(const PlyElement& e, uint64_t i) {
    return "PLY data ends inside " + e.name + " " + std::to_string(i) + " of " + std::to_string(e.count);
  }
};

std::optional<std::string> CheckPlyAsciiBody(LineReader& lines, const std::vector<PlyElement>& elements,
                                             const PlyBodyCheck& check) {
  std::vector<std::string_view> words;
  for (const PlyElement& e : elements) {
    if (e.properties.empty()) continue;
    for (uint64_t i = 0; i < e.count; ++i) {
      words.clear();
      while (words.empty()) {
        auto line = lines.Next();
        if (!line) return check.Truncated(e, i);
        SplitWords(*line, &words);
      }
      size_t w = 0;
      for (const PlyProperty& p : e.properties) {
        uint64_t items = 1;
        if (p.count_type != nullptr) {
          if (w >= words.size()) return check.Truncated(e, i);
          const PlyValue n = ParseAsciiValue(words[w++], *p.count_type);
          if (!n.ok || n.integer < 0) return "bad PLY list length in " + e.name + " " + std::to_string(i);
          if (n.integer == 0 && p.is_index_list) return EmptyIndexList(e, i);
          items = static_cast<uint64_t>(n.integer);
        }
        if (items > words.size() - w) return check.Truncated(e, i);
        for (uint64_t k = 0; k < items; ++k) {
          const PlyValue v = ParseAsciiValue(words[w++], *p.type);
          if (!v.ok) return "bad PLY number in " + e.name + " " + std::to_string(i);
          if (p.is_index_list) {
            if (auto bad = check.Index(e, v)) return bad;
          }
        }
      }
    }
  }
  return std::nullopt;
}

std::optional<std::string> CheckPlyBinaryBody(std::string_view bytes, size_t pos, bool little_endian,
                                              const std::vector<PlyElement>& elements, const PlyBodyCheck& check) {
  for (const PlyElement& e : elements) {
    if (e.properties.empty()) continue;
    for (uint64_t i = 0; i < e.count; ++i) {
      for (const PlyProperty& p : e.properties) {
        uint64_t items = 1;
        if (p.count_type != nullptr) {
          if (bytes.size() - pos < static_cast<size_t>(p.count_type->size)) return check.Truncated(e, i);
          const PlyValue n = ReadBinaryValue(bytes, pos, *p.count_type, little_endian);
          pos += p.count_type->size;
          if (n.integer < 0) return "negative PLY list length in " + e.name + " " + std::to_string(i);
          if (n.integer == 0 && p.is_index_list) return EmptyIndexList(e, i);
          items = static_cast<uint64_t>(n.integer);
        }
        if (items > (bytes.size() - pos) / p.type->size) return check.Truncated(e, i);
        if (p.is_index_list) {
          for (uint64_t k = 0; k < items; ++k) {
            if (auto bad = check.Index(e, ReadBinaryValue(bytes, pos + k * p.type->size, *p.type, little_endian))) {
              return bad;
            }
          }
        }
        pos += items * p.type->size;
      }
    }
  }
  return std::nullopt;
}

/// Returns why the PLY bytes are unusable, or nullopt when the header is complete and the body holds every
/// element it declares with face indices in range and none empty.
std::optional<std::string> CheckPly(std::string_view bytes) {
  LineReader lines(bytes);
  std::vector<std::string_view> words;
  auto first = lines.Next();
  if (first) SplitWords(*first, &words);
  if (!first || words != std::vector<std::string_view>{"ply"}) return "PLY data does not start with 'ply'";
  std::string format;
  std::vector<PlyElement> elements;
  if (auto bad = ReadPlyHeader(lines, &format, &elements)) return bad;
  PlyBodyCheck check;
  for (const PlyElement& e : elements) {
    if (e.name == "vertex") {
      check.num_vertices = static_cast<int64_t>(std::min<uint64_t>(e.count, std::numeric_limits<int32_t>::max()));
      break;
    }
  }
  if (format == "ascii") return CheckPlyAsciiBody(lines, elements, check);
  return CheckPlyBinaryBody(bytes, lines.position(), format == "binary_little_endian", elements, check);
}

bool LooksLikePly(std::string_view bytes) {
  return bytes.size() >= 4 && bytes.substr(0, 3) == "ply" && std::isspace(static_cast<unsigned char>(bytes[3]));
}


// ----------------------------------------------------------------------------------------------------------
// COLLADA index lists. assimp 5.2.5 turns a stray character in a <p> or <vcount> list (one byte changed in
// tests/data/boxes_z_up.dae) into allocations of gigabytes, and dereferences null on some of them; those
// lists hold unsigned integers only, so anything else is refused before assimp sees the document.

bool LooksLikeCollada(const std::string& extension, std::string_view bytes) {
  if (extension == "dae") return true;
  const std::string_view head = bytes.substr(0, 4096);
  return Lower(std::string(head)).find("<collada") != std::string::npos;
}

/// Why the document holds a byte XML 1.0 does not allow (a control character other than tab, line feed
/// and carriage return), or nullopt. assimp 5.2.5 reads a form feed inside a <p> list as a line end and
/// still allocated gigabytes for that list (found by mesh_fuzz); no well-formed document has one.
std::optional<std::string> CheckColladaCharacters(std::string_view bytes) {
  for (size_t i = 0; i < bytes.size(); ++i) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02x", c);
      return "COLLADA byte " + std::to_string(i) + " is the control character " + hex + ", which XML does not allow";
    }
  }
  return std::nullopt;
}

/// The first occurrence of `needle` at or after positions that never decrease, in linear time over all the
/// calls together: a match still ahead of the position is reused. (Searching afresh from every element
/// made the checks quadratic in a document of many unclosed tags.)
class ForwardFind {
 public:
  ForwardFind(std::string_view bytes, std::string_view needle) : bytes_(bytes), needle_(needle) {}
  size_t operator()(size_t from) {
    if (!searched_ || (found_ != std::string_view::npos && found_ < from)) {
      found_ = bytes_.find(needle_, from);
      searched_ = true;
    }
    return found_;
  }

 private:
  std::string_view bytes_, needle_;
  size_t found_ = 0;
  bool searched_ = false;
};

/// An element of a COLLADA document found textually: where its tag starts, its opening tag's text (up to
/// its '>'), and where its content starts (npos for <name/> or a tag never closed).
struct ColladaElement {
  size_t at = 0;
  std::string_view tag;
  size_t content = std::string_view::npos;
};

/// Opening tags longer than this are refused where their attributes are read (no exporter writes one).
constexpr size_t kColladaMaxTag = 4096;

/// Calls f(element) for every element <name ...> of a COLLADA document, in order, found textually (not
/// the longer names that start the same, <param> for <p>). Returns f's first message, or nullopt.
template <class F>
std::optional<std::string> ForEachColladaElement(std::string_view bytes, std::string_view name, F&& f) {
  std::string open(1, '<');
  open += name;  // not "<" + std::string(name): GCC 12 warns falsely (-Wrestrict) on that once inlined
  ForwardFind tag_end(bytes, ">");
  for (size_t at = bytes.find(open); at != std::string_view::npos; at = bytes.find(open, at + 1)) {
    const size_t after = at + open.size();
    if (after >= bytes.size()) break;
    const char c = bytes[after];
    if (c != '>' && c != '/' && !std::isspace(static_cast<unsigned char>(c))) continue;
    const size_t end = tag_end(after);
    ColladaElement e;
    e.at = at;
    e.tag = bytes.substr(at, (end == std::string_view::npos ? bytes.size() : end) - at);
    if (end != std::string_view::npos && bytes[end - 1] != '/') e.content = end + 1;
    if (auto bad = f(e)) return bad;
  }
  return std::nullopt;
}

/// The content of each element <name> in turn: from its opening tag to its closing tag, or to the next
/// element of the same name when that comes first (these elements do not nest), so that the contents
/// are disjoint and reading them all is linear.
class ColladaContents {
 public:
  ColladaContents(std::string_view bytes, std::string_view name)
      : bytes_(bytes),
        close_needle_(std::string("</").append(name)),  // (GCC 12 warns falsely on "</" + std::string)
        open_needle_(std::string("<").append(name)),
        close_(bytes, close_needle_),
        next_(bytes, open_needle_) {}
  std::string_view operator()(const ColladaElement& e) {
    if (e.content == std::string_view::npos) return {};
    const size_t end = std::min({close_(e.content), next_(e.content), bytes_.size()});
    return bytes_.substr(e.content, end - e.content);
  }

 private:
  std::string_view bytes_;
  std::string close_needle_, open_needle_;  // before the finders that view them
  ForwardFind close_, next_;
};

/// Why a <p> or <vcount> list of the document holds something other than digits and white space, or nullopt.
std::optional<std::string> CheckColladaIndexLists(std::string_view bytes) {
  for (const std::string_view tag : {std::string_view("p"), std::string_view("vcount")}) {
    ForwardFind next_tag(bytes, "<");
    auto bad = ForEachColladaElement(bytes, tag, [&](const ColladaElement& e) -> std::optional<std::string> {
      if (e.content == std::string_view::npos) return std::nullopt;
      const size_t close = std::min(next_tag(e.content), bytes.size());
      for (const char v : bytes.substr(e.content, close - e.content)) {
        if (!std::isdigit(static_cast<unsigned char>(v)) && !std::isspace(static_cast<unsigned char>(v))) {
          return "COLLADA <" + std::string(tag) + "> list at byte " + std::to_string(e.content) +
                 " holds something other than unsigned integers";
        }
      }
      return std::nullopt;
    });
    if (bad) return bad;
  }
  return std::nullopt;
}

/// The mesh primitives of COLLADA: <triangles>, <polylist>, <polygons>, <trifans>, <tristrips>, <lines>,
/// <linestrips>.
constexpr std::string_view kColladaPrimitives[] = {"triangles", "polylist",  "polygons",  "trifans",
                                                   "tristrips", "lines",     "linestrips"};

/// The value of attribute `name` in an opening tag, or nullopt.
std::optional<std::string_view> ColladaAttribute(std::string_view tag, std::string_view name) {
  for (size_t k = tag.find(name); k != std::string_view::npos; k = tag.find(name, k + 1)) {
    if (k == 0 || !std::isspace(static_cast<unsigned char>(tag[k - 1]))) continue;
    size_t v = k + name.size();
    while (v < tag.size() && std::isspace(static_cast<unsigned char>(tag[v]))) ++v;
    if (v >= tag.size() || tag[v] != '=') continue;
    ++v;
    while (v < tag.size() && std::isspace(static_cast<unsigned char>(tag[v]))) ++v;
    if (v >= tag.size() || (tag[v] != '"' && tag[v] != '\'')) continue;
    const size_t close = tag.find(tag[v], v + 1);
    if (close == std::string_view::npos) return tag.substr(v + 1);
    return tag.substr(v + 1, close - v - 1);
  }
  return std::nullopt;
}

/// The <input> tags of an element's content, each with its text, in order (tags longer than
/// kColladaMaxTag stop the walk with a message).
template <class F>
std::optional<std::string> ForEachColladaInput(std::string_view inside, size_t offset, F&& f) {
  ForwardFind tag_end(inside, ">");
  for (size_t in = inside.find("<input"); in != std::string_view::npos; in = inside.find("<input", in + 1)) {
    const size_t end = std::min(tag_end(in), inside.size());
    if (end - in > kColladaMaxTag) {
      return "COLLADA <input> at byte " + std::to_string(offset + in) + " has an opening tag longer than " +
             std::to_string(kColladaMaxTag) + " bytes";
    }
    if (auto bad = f(offset + in, inside.substr(in, end - in))) return bad;
  }
  return std::nullopt;
}

/// Every COLLADA mesh primitive must have an <input> with semantic VERTEX, as the COLLADA schema requires:
/// assimp 5.2.5 dereferences that input without looking (a <polylist count="1"> with no input was a null
/// dereference inside assimp). A primitive without one has no geometry anyway.
std::optional<std::string> CheckColladaPrimitiveInputs(std::string_view bytes) {
  for (const std::string_view name : kColladaPrimitives) {
    ColladaContents contents(bytes, name);
    auto bad = ForEachColladaElement(bytes, name, [&](const ColladaElement& e) -> std::optional<std::string> {
      const std::string_view inside = contents(e);
      bool vertex = false;
      auto long_tag = ForEachColladaInput(inside, e.content, [&](size_t, std::string_view tag) -> std::optional<std::string> {
        vertex = vertex || tag.find("VERTEX") != std::string_view::npos;
        return std::nullopt;
      });
      if (long_tag) return long_tag;
      if (vertex) return std::nullopt;
      return "COLLADA <" + std::string(name) + "> at byte " + std::to_string(e.at) + " has no <input semantic=\"VERTEX\">";
    });
    if (bad) return bad;
  }
  return std::nullopt;
}

/// The unsigned integer an attribute holds (white space around it allowed), or nullopt for anything else
/// (a sign, a fraction, a stray byte, more than 2^32 - 1, which assimp reads as another number or 0).
std::optional<uint64_t> ColladaUnsigned(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value > 0xffffffffu) return std::nullopt;
  return value;
}

/// Data arrays and accessors. assimp 5.2.5 reads an accessor's elements at offset + index * stride of its
/// array without comparing with the array's size: an accessor that reaches past its array (a float_array
/// whose count a stray byte made 0, found by mesh_fuzz) reads freed or unmapped memory, and a mesh input
/// whose accessor names a Name_array or IDREF_array (strings, no numbers) dereferences null. So the count,
/// stride and offset attributes must be unsigned integers, every accessor must name an array of the
/// document and fit in it, and no <vertices> or primitive input may read strings.
std::optional<std::string> CheckColladaAccessors(std::string_view bytes) {
  const auto long_tag = [](std::string_view element, const ColladaElement& e) -> std::optional<std::string> {
    if (e.tag.size() <= kColladaMaxTag) return std::nullopt;
    return "COLLADA <" + std::string(element) + "> at byte " + std::to_string(e.at) +
           " has an opening tag longer than " + std::to_string(kColladaMaxTag) + " bytes";
  };
  const auto number = [](std::string_view element, const ColladaElement& e, std::string_view name,
                         uint64_t fallback) -> Result<uint64_t> {
    const auto text = ColladaAttribute(e.tag, name);
    if (!text) return fallback;
    const auto value = ColladaUnsigned(*text);
    if (!value) {
      return ParseError("COLLADA <" + std::string(element) + "> at byte " + std::to_string(e.at) + " has " +
                        std::string(name) + "=\"" + std::string(text->substr(0, 16)) + "\", not an unsigned integer");
    }
    return *value;
  };
  struct Array {
    uint64_t count = 0;
    bool strings = false;
  };
  std::unordered_map<std::string, Array> arrays;  // by id; an id given twice keeps the smaller count
  for (const std::string_view element : {std::string_view("float_array"), std::string_view("Name_array"),
                                         std::string_view("IDREF_array")}) {
    auto bad = ForEachColladaElement(bytes, element, [&](const ColladaElement& e) -> std::optional<std::string> {
      if (auto why = long_tag(element, e)) return why;
      const Result<uint64_t> count = number(element, e, "count", 0);
      if (!count.ok()) return count.error().message;
      const Array array{count.value(), element != "float_array"};
      const auto [it, added] = arrays.try_emplace(std::string(ColladaAttribute(e.tag, "id").value_or("")), array);
      if (!added) it->second = {std::min(it->second.count, array.count), it->second.strings || array.strings};
      return std::nullopt;
    });
    if (bad) return bad;
  }
  // Where each <source> starts, and its id.
  std::vector<std::pair<size_t, std::string>> sources;
  auto bad = ForEachColladaElement(bytes, "source", [&](const ColladaElement& e) -> std::optional<std::string> {
    if (auto why = long_tag("source", e)) return why;
    sources.emplace_back(e.at, std::string(ColladaAttribute(e.tag, "id").value_or("")));
    return std::nullopt;
  });
  if (bad) return bad;
  std::unordered_map<std::string, bool> source_reads_strings;  // by the id of the <source> holding the accessor
  ColladaContents accessor_contents(bytes, "accessor");
  bad = ForEachColladaElement(bytes, "accessor", [&](const ColladaElement& e) -> std::optional<std::string> {
    if (auto why = long_tag("accessor", e)) return why;
    uint64_t field[3] = {};
    const char* const kNames[] = {"count", "offset", "stride"};
    for (int k = 0; k < 3; ++k) {
      const Result<uint64_t> value = number("accessor", e, kNames[k], k == 2 ? 1 : 0);
      if (!value.ok()) return value.error().message;
      field[k] = value.value();
    }
    const std::string_view source = ColladaAttribute(e.tag, "source").value_or("");
    const auto array = source.empty() || source.front() != '#' ? arrays.end() : arrays.find(std::string(source.substr(1)));
    if (array == arrays.end()) {
      return "COLLADA <accessor> at byte " + std::to_string(e.at) + " names source \"" +
             std::string(source.substr(0, 64)) + "\", not a data array of the document";
    }
    uint64_t params = 0;
    const std::string_view inside = accessor_contents(e);
    for (size_t p = inside.find("<param"); p != std::string_view::npos; p = inside.find("<param", p + 1)) ++params;
    const auto [count, offset, stride] = field;
    const uint64_t values = array->second.count;
    if (count > 0 && offset + (count - 1) * stride + std::max<uint64_t>(params, 1) > values) {
      return "COLLADA <accessor> at byte " + std::to_string(e.at) + " reads " + std::to_string(count) +
             " elements of stride " + std::to_string(stride) + " from offset " + std::to_string(offset) +
             " of an array of " + std::to_string(values) + " values";
    }
    // The <source> this accessor belongs to: the last one opened before it.
    const auto owner = std::upper_bound(sources.begin(), sources.end(), e.at,
                                        [](size_t position, const auto& opened) { return position < opened.first; });
    if (owner != sources.begin()) {
      bool& strings = source_reads_strings[std::prev(owner)->second];
      strings = strings || array->second.strings;
    }
    return std::nullopt;
  });
  if (bad) return bad;
  // Inputs of <vertices> and of primitives read numbers.
  std::vector<std::string_view> geometry(std::begin(kColladaPrimitives), std::end(kColladaPrimitives));
  geometry.push_back("vertices");
  for (const std::string_view name : geometry) {
    ColladaContents contents(bytes, name);
    bad = ForEachColladaElement(bytes, name, [&](const ColladaElement& e) -> std::optional<std::string> {
      return ForEachColladaInput(contents(e), e.content, [&](size_t at, std::string_view tag) -> std::optional<std::string> {
        const std::string_view source = ColladaAttribute(tag, "source").value_or("");
        if (source.empty() || source.front() != '#') return std::nullopt;
        const auto it = source_reads_strings.find(std::string(source.substr(1)));
        if (it == source_reads_strings.end() || !it->second) return std::nullopt;
        return "COLLADA <" + std::string(name) + "> input at byte " + std::to_string(at) + " reads source \"" +
               std::string(source.substr(0, 64)) + "\", which holds names, not numbers";
      });
    });
    if (bad) return bad;
  }
  return std::nullopt;
}

// ----------------------------------------------------------------------------------------------------------
// What assimp may read besides the bytes it is given: nothing.

/// The file system assimp sees when it follows a reference out of the bytes (an OBJ's mtllib): empty. The
/// loaders read mesh bytes under FileAccess themselves; without this, assimp's memory reader passes any
/// other name to the real file system, outside the policy (an mtllib naming a FIFO blocked the load).
class NoFiles final : public Assimp::IOSystem {
 public:
  bool Exists(const char*) const override { return false; }
  char getOsSeparator() const override { return '/'; }
  Assimp::IOStream* Open(const char*, const char*) override { return nullptr; }
  void Close(Assimp::IOStream*) override {}
};

/// Whether bytes with no usable extension are OBJ text, by the rule assimp's OBJ importer claims them: a
/// line of the first 200 bytes that starts with an OBJ statement.
bool LooksLikeObj(std::string_view bytes) {
  static constexpr std::string_view kStatements[] = {"mtllib", "usemtl", "v ", "vt ", "vn ", "o ", "g ", "s ", "f "};
  std::istringstream head(Lower(std::string(bytes.substr(0, 200))));
  for (std::string line; std::getline(head, line);) {
    const std::string_view text = std::string_view(line).substr(std::min(line.find_first_not_of(" \t"), line.size()));
    for (const std::string_view s : kStatements) {
      if (text.starts_with(s)) return true;
    }
  }
  return false;
}

/// assimp's post-processed scene of `bytes` (owned by `importer`), read with NoFiles and without assimp's
/// OBJ importer; nullptr with *error set when assimp cannot read the bytes or their faces are unusable.
/// Post-processing runs only after the raw faces are checked: assimp 5.2.5's triangulation asserts (aborts
/// the process) on a face without indices, which several of its importers produce from malformed files.
const aiScene* ReadWithAssimp(Assimp::Importer& importer, const std::string& bytes, const std::string& extension,
                              std::string* error) {
  importer.SetIOHandler(new NoFiles());
  // OBJ is the project's reader's: assimp's OBJ importer is taken out, so no bytes reach it by their
  // content either (it wrote through a null material when an mtllib could not be opened, and corrupted
  // its heap on other inputs mesh_fuzz found). Unregistering hands the importer object back: delete it.
  if (Assimp::BaseImporter* obj = importer.GetImporter("obj")) {
    importer.UnregisterLoader(obj);
    delete obj;
  }
  const aiScene* raw = importer.ReadFileFromMemory(bytes.data(), bytes.size(), 0, extension.c_str());
  if (raw == nullptr) {
    *error = importer.GetErrorString();
    return nullptr;
  }
  for (unsigned m = 0; m < raw->mNumMeshes; ++m) {
    const aiMesh* mesh = raw->mMeshes[m];
    if (mesh == nullptr) continue;
    for (unsigned f = 0; f < mesh->mNumFaces; ++f) {
      if (mesh->mFaces == nullptr || mesh->mFaces[f].mNumIndices == 0 || mesh->mFaces[f].mIndices == nullptr) {
        *error = "face " + std::to_string(f) + " of submesh " + std::to_string(m) + " has no vertex indices";
        return nullptr;
      }
    }
  }
  const aiScene* scene = importer.ApplyPostProcessing(kPostProcess);
  if (scene == nullptr) *error = importer.GetErrorString();
  return scene;
}


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
        const Vec3 p_M = scale.cwiseProduct(X_MN * p_N);
        if (!p_M.allFinite()) {
          const std::string which = "vertex " + std::to_string(v) + " of submesh " + std::to_string(mesh_index);
          if (!p_N.allFinite()) {
            return ParseError(label + ": " + which + " has a non-finite coordinate " + FormatVec(p_N));
          }
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

/// One cleaned TriangleMesh from what a reader gathered.
Result<TriangleMesh> Finish(Gathered g, const MeshLoadOptions& options, const std::string& label,
                            MeshLoadReport* report) {
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
    report->kept_degenerate = cleaning.kept_degenerate;
    report->welded_vertices = cleaning.welded_vertices;
  }
  return mesh;
}

/// Parses a file's bytes by its extension or format hint: OBJ with the project's reader, every other
/// format with assimp, after the checks that keep assimp's known failures (crashes, runaway allocation)
/// away from it.
Result<TriangleMesh> Parse(const std::string& bytes, const std::string& extension, const MeshLoadOptions& options,
                           const std::string& label, MeshLoadReport* report) {
  const auto read_obj = [&]() -> Result<TriangleMesh> {
    Result<Gathered> gathered = ReadObj(bytes, options.scale, label);
    if (!gathered.ok()) return gathered.error();
    return Finish(std::move(gathered).value(), options, label, report);
  };
  if (extension == "obj") return read_obj();
  Assimp::Importer importer;
  // Without an extension assimp knows, a format is recognised by content, as assimp would.
  const bool unknown = extension.empty() || !importer.IsExtensionSupported("." + extension);
  if (unknown && LooksLikeObj(bytes)) return read_obj();
  if (extension == "ply" || (unknown && LooksLikePly(bytes))) {
    if (auto bad = CheckPly(bytes)) return ParseError("cannot parse " + label + ": " + *bad);
  }
  if (LooksLikeCollada(extension, bytes)) {
    for (const auto check :
         {CheckColladaCharacters, CheckColladaIndexLists, CheckColladaPrimitiveInputs, CheckColladaAccessors}) {
      if (auto bad = check(bytes)) return ParseError("cannot parse " + label + ": " + *bad);
    }
  }
  std::string why;
  const aiScene* scene = ReadWithAssimp(importer, bytes, extension, &why);
  if (scene == nullptr) return ParseError("cannot parse " + label + ": " + why);
  if (scene->mRootNode == nullptr) return ParseError(label + " has no triangles (the file holds no scene)");
  Result<Gathered> gathered = GatherTriangles(*scene, RootTransform(*scene, extension), options.scale, label);
  if (!gathered.ok()) return gathered.error();
  return Finish(std::move(gathered).value(), options, label, report);
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
    if (!options.files.confined) {
      // An unconfined load names the cause; a confined one leaves that to ReadFileUnder's one message.
      std::error_code ec;
      const auto status = std::filesystem::status(path, ec);
      if (!std::filesystem::exists(status)) return NotFound("mesh file not found: " + path);
      if (std::filesystem::is_directory(status)) return ParseError(label + " is a directory, not a mesh file");
      if (!std::filesystem::is_regular_file(status)) return ParseError(label + " is not a regular file");
    }
    // The bytes are read once, through the file policy (regular files only, non-blocking, size-capped),
    // and parsed from memory: assimp opens no file of its own (an OBJ's material library is not read).
    Result<std::string> bytes = ReadFileUnder(options.files, path);
    if (!bytes.ok()) return options.files.confined ? bytes.error() : ParseError("cannot open " + label);
    if (bytes.value().empty()) return ParseError(label + " is empty");

    std::string extension = Lower(std::filesystem::path(path).extension().string());
    if (!extension.empty()) extension.erase(0, 1);
    return Parse(bytes.value(), extension, options, label, report);
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
    return Parse(bytes, hint, options, label, report);
  });
}

}  // namespace proximity::core
