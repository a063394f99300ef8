// URDF loading: a tinyxml2 pass checks structure and names every bad element (urdfdom only logs its
// reasons), urdfdom parses the contents, mesh URIs resolve through the package map and ROS_PACKAGE_PATH,
// and meshes come from a shared MeshCache.

#include <tinyxml2.h>
#include <urdf_parser/urdf_parser.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "proximity/core/mesh/mesh.h"
#include "proximity/core/robot/robot_model.h"
#include "bvh/solid_interior.h"

namespace proximity::core {
namespace {

namespace fs = std::filesystem;

// How far (m) a convex mesh's vertices may sit inside its hull's (merged, nearly coplanar) face planes
// and still count as the hull's surface. Only the tightness of distance bounds depends on it: the
// hull's distance bounds the mesh's from below whatever the mesh.
constexpr double kHullSurfaceTolerance = 1e-3;

bool IsRegularFile(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

std::string Canonical(const fs::path& p) {
  std::error_code ec;
  fs::path c = fs::weakly_canonical(p, ec);
  return ec ? fs::absolute(p).lexically_normal().string() : c.string();
}

// The <name> of a package.xml, or "" when it has none.
std::string PackageXmlName(const fs::path& package_xml) {
  tinyxml2::XMLDocument doc;
  if (doc.LoadFile(package_xml.string().c_str()) != tinyxml2::XML_SUCCESS) return "";
  const tinyxml2::XMLElement* root = doc.FirstChildElement("package");
  if (root == nullptr) return "";
  const tinyxml2::XMLElement* name = root->FirstChildElement("name");
  if (name == nullptr || name->GetText() == nullptr) return "";
  std::string s = name->GetText();
  const auto b = s.find_first_not_of(" \t\r\n");
  const auto e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

std::vector<std::string> SplitRoots(const std::string& paths) {
  std::vector<std::string> roots;
  std::stringstream ss(paths);
  std::string item;
  while (std::getline(ss, item, ':')) {
    if (!item.empty()) roots.push_back(item);
  }
  return roots;
}

// Crawls ROS_PACKAGE_PATH roots the way rospkg does: a folder holding package.xml is a package named by
// its <name> (the folder name may differ); the crawl does not descend into packages, hidden folders or
// folders marked CATKIN_IGNORE. The first root that holds a package wins.
std::map<std::string, std::string> CrawlPackages(const std::vector<std::string>& roots) {
  std::map<std::string, std::string> found;
  for (const std::string& root : roots) {
    std::error_code ec;
    if (!fs::is_directory(root, ec)) continue;
    const auto visit = [&found](const fs::path& dir) {
      const fs::path xml = dir / "package.xml";
      if (!IsRegularFile(xml)) return false;
      const std::string name = PackageXmlName(xml);
      if (!name.empty()) found.emplace(name, Canonical(dir));
      return true;
    };
    if (visit(root)) continue;
    fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec);
    for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (!it->is_directory(ec)) continue;
      const std::string leaf = it->path().filename().string();
      if ((!leaf.empty() && leaf[0] == '.') || IsRegularFile(it->path() / "CATKIN_IGNORE") || visit(it->path())) {
        it.disable_recursion_pending();
      }
    }
  }
  return found;
}

// Resolves URIs for one load, crawling ROS_PACKAGE_PATH at most once.
class UriResolver {
 public:
  explicit UriResolver(const RobotLoadOptions& options) : options_(options) {
    if (options.ros_package_path.has_value()) {
      ros_package_path_ = *options.ros_package_path;
    } else if (const char* env = std::getenv("ROS_PACKAGE_PATH"); env != nullptr) {
      ros_package_path_ = env;
    }
  }

  Result<std::string> Resolve(const std::string& uri) {
    if (options_.uploaded_files.contains(uri)) return std::string(kUploadedFilePrefix) + uri;
    std::vector<std::string> tried;
    // `shown` is what a failure names instead of `p` (a path relative to the working directory is
    // named as given: the error must not tell a remote caller where the daemon runs).
    const auto found = [&](const fs::path& p, const fs::path& shown = {}) -> std::optional<std::string> {
      if (IsRegularFile(p) && options_.files.Allows(p.string())) return Canonical(p);
      tried.push_back(shown.empty() ? p.string() : shown.string());
      return std::nullopt;
    };
    const auto fail = [&](const std::string& extra) -> Error {
      std::string msg = "cannot resolve mesh URI '" + uri + "'";
      if (!tried.empty()) {
        msg += "; tried:";
        for (const std::string& t : tried) msg += " '" + t + "'";
      }
      return NotFound(msg + extra);
    };
    constexpr std::string_view kPackage = "package://";
    constexpr std::string_view kFile = "file://";
    if (uri.starts_with(kPackage)) {
      const std::string rest = uri.substr(kPackage.size());
      const auto slash = rest.find('/');
      if (slash == std::string::npos || slash == 0) return InvalidArgument("mesh URI '" + uri + "' has no package/path");
      const std::string pkg = rest.substr(0, slash);
      const std::string path = rest.substr(slash + 1);
      if (auto it = options_.package_dirs.find(pkg); it != options_.package_dirs.end()) {
        if (auto p = found(fs::path(it->second) / path)) return *p;
      }
      std::vector<std::string> roots = SplitRoots(ros_package_path_);
      std::erase_if(roots, [&](const std::string& r) { return !options_.files.Allows(r); });
      if (!crawled_) {
        packages_ = CrawlPackages(roots);
        crawled_ = true;
      }
      if (auto it = packages_.find(pkg); it != packages_.end()) {
        // Found by the crawl: the package's folder is the server's, not the caller's, and goes unnamed.
        if (auto p = found(fs::path(it->second) / path, "(package '" + pkg + "' under ROS_PACKAGE_PATH)/" + path)) {
          return *p;
        }
      }
      std::string extra;
      if (!options_.package_dirs.contains(pkg)) extra += "; package '" + pkg + "' is not in the package map";
      if (!packages_.contains(pkg)) {
        extra += roots.empty() ? "; ROS_PACKAGE_PATH is empty"
                               : "; no package.xml with <name>" + pkg + "</name> under ROS_PACKAGE_PATH";
      }
      return fail(extra);
    }
    std::string path = uri;
    if (uri.starts_with(kFile)) path = uri.substr(kFile.size());
    if (path.empty()) return InvalidArgument("mesh URI is empty");
    fs::path p(path);
    if (p.is_absolute()) {
      if (auto r = found(p)) return *r;
      return fail("");
    }
    if (!options_.urdf_dir.empty()) {
      if (auto r = found(fs::path(options_.urdf_dir) / p)) return *r;
      return fail("");
    }
    if (auto r = found(fs::absolute(p), p)) return *r;
    return fail(" (relative to the server's working directory: no URDF directory was given for relative paths)");
  }

 private:
  const RobotLoadOptions& options_;
  std::string ros_package_path_;
  bool crawled_ = false;
  std::map<std::string, std::string> packages_;
};

// What the structural pass learned about the document.
// One geometry element of a link, from its <collision> or <visual> list.
struct GeometryElement {
  const char* kind;  // "collision" or "visual", for messages
  size_t index;      // position in that list
  std::string name;
  urdf::Pose origin;
  urdf::GeometrySharedPtr geometry;
};

// The elements a link collides with: its <collision> list, or with `from_visual` its <visual> list
// when it has one (links without visuals keep their collision geometry).
std::vector<GeometryElement> GeometryElements(const urdf::Link& link, bool from_visual) {
  std::vector<GeometryElement> out;
  if (from_visual && !link.visual_array.empty()) {
    for (size_t i = 0; i < link.visual_array.size(); ++i) {
      const urdf::VisualSharedPtr& v = link.visual_array[i];
      out.push_back({"visual", i, v ? v->name : "", v ? v->origin : urdf::Pose(), v ? v->geometry : nullptr});
    }
    return out;
  }
  for (size_t i = 0; i < link.collision_array.size(); ++i) {
    const urdf::CollisionSharedPtr& c = link.collision_array[i];
    out.push_back({"collision", i, c ? c->name : "", c ? c->origin : urdf::Pose(), c ? c->geometry : nullptr});
  }
  return out;
}

// As GeometryElements, but a link whose visual meshes are wanted and one of them does not resolve (a
// missing file, as ROS tools tolerate for visuals) keeps its collision elements; *fell_back names the
// first such URI then.
template <class Resolver>
std::vector<GeometryElement> UsableGeometryElements(const urdf::Link& link, bool from_visual, Resolver& resolver,
                                                    std::string* fell_back) {
  std::vector<GeometryElement> elements = GeometryElements(link, from_visual);
  if (!from_visual || link.visual_array.empty()) return elements;
  for (const GeometryElement& e : elements) {
    if (!e.geometry || e.geometry->type != urdf::Geometry::MESH) continue;
    const std::string& uri = static_cast<const urdf::Mesh&>(*e.geometry).filename;
    if (!resolver.Resolve(uri).ok()) {
      *fell_back = uri;
      return GeometryElements(link, false);
    }
  }
  return elements;
}

struct UrdfOutline {
  std::string robot_name;
  std::vector<std::string> links;   // document order
  std::vector<std::string> joints;  // document order
};

std::string Where(const tinyxml2::XMLElement* e) { return " (line " + std::to_string(e->GetLineNum()) + ")"; }

// Attributes whose values are numbers; each whitespace-separated token must be finite.
bool IsNumericAttribute(std::string_view element, std::string_view attribute) {
  static const std::set<std::pair<std::string_view, std::string_view>> kNumeric = {
      {"origin", "xyz"},     {"origin", "rpy"},       {"axis", "xyz"},        {"limit", "lower"},
      {"limit", "upper"},    {"limit", "velocity"},   {"limit", "effort"},    {"mimic", "multiplier"},
      {"mimic", "offset"},   {"box", "size"},         {"cylinder", "radius"}, {"cylinder", "length"},
      {"sphere", "radius"},  {"mesh", "scale"}};
  return kNumeric.contains({element, attribute});
}

// Names the enclosing <link>/<joint> of an element, for messages.
std::string Owner(const tinyxml2::XMLElement* e) {
  for (const tinyxml2::XMLNode* n = e; n != nullptr; n = n->Parent()) {
    const tinyxml2::XMLElement* el = n->ToElement();
    if (el == nullptr) continue;
    const std::string tag = el->Name();
    if ((tag == "link" || tag == "joint") && el->Attribute("name") != nullptr) {
      return tag + " '" + el->Attribute("name") + "'";
    }
  }
  return "robot";
}

Status CheckFiniteAttributes(const tinyxml2::XMLElement* e) {
  for (const tinyxml2::XMLAttribute* a = e->FirstAttribute(); a != nullptr; a = a->Next()) {
    if (!IsNumericAttribute(e->Name(), a->Name())) continue;
    std::stringstream ss(a->Value());
    std::string token;
    while (ss >> token) {
      char* end = nullptr;
      const double v = std::strtod(token.c_str(), &end);
      if (end == token.c_str() || *end != '\0') {
        return ParseError("<" + std::string(e->Name()) + " " + a->Name() + "=\"" + a->Value() + "\"> of " + Owner(e) +
                          Where(e) + " is not a number");
      }
      if (!std::isfinite(v)) {
        return InvalidArgument("<" + std::string(e->Name()) + " " + a->Name() + "=\"" + a->Value() + "\"> of " +
                               Owner(e) + Where(e) + " is not finite");
      }
    }
  }
  for (const tinyxml2::XMLElement* c = e->FirstChildElement(); c != nullptr; c = c->NextSiblingElement()) {
    if (Status s = CheckFiniteAttributes(c); !s.ok()) return s;
  }
  return {};
}

// Checks what urdfdom would only log: well-formed XML, unique names, existing parents and children,
// one tree, limits where required, finite numbers. Returns the names in document order.
// Bytes a mesh hierarchy takes per triangle, as an estimate before it is built (MeshModel::MemoryBytes
// measures about 150-250 on real meshes: the triangles, the leaf order and two trees).
constexpr int64_t kEstimatedBytesPerTriangle = 320;

Status CheckLinkTriangles(const TriangleMesh& mesh, const BuildLimits& limits) {
  return CheckCap(static_cast<int64_t>(mesh.triangles.size()), limits.max_link_triangles, "triangles",
                  "max_link_triangles");
}

// The model's own tables grow with the square of its links (the allowed-pair matrix, and each link's
// motion terms along its path to the root): bytes per link pair, as an upper bound.
constexpr int64_t kModelBytesPerLinkPair = 1 + 48;

// The caps on links, joints and the model's tables, before urdfdom parses the robot or anything is built.
Status CheckOutlineLimits(const UrdfOutline& outline, const BuildLimits& limits) {
  const auto links = static_cast<int64_t>(outline.links.size());
  if (Status s = CheckCap(links, limits.max_links, "URDF: links", "max_links"); !s.ok()) return s;
  if (Status s = CheckCap(static_cast<int64_t>(outline.joints.size()), limits.max_joints, "URDF: joints", "max_joints");
      !s.ok()) {
    return s;
  }
  return CheckCap(links * links * kModelBytesPerLinkPair, limits.max_memory_bytes,
                  "URDF: estimated bytes of the model's link tables", "max_memory_bytes");
}

Result<UrdfOutline> OutlineUrdf(std::string_view xml, const std::string& source) {
  tinyxml2::XMLDocument doc;
  if (doc.Parse(xml.data(), xml.size()) != tinyxml2::XML_SUCCESS) {
    return ParseError(source + ": malformed XML at line " + std::to_string(doc.ErrorLineNum()) + ": " +
                      doc.ErrorStr());
  }
  const tinyxml2::XMLElement* robot = doc.FirstChildElement("robot");
  if (robot == nullptr) return ParseError(source + ": no <robot> element");
  UrdfOutline out;
  out.robot_name = robot->Attribute("name") ? robot->Attribute("name") : "";
  std::set<std::string> links;
  std::map<std::string, std::string> parent_of;  // child link -> joint
  struct J {
    std::string name, type, parent, child;
    const tinyxml2::XMLElement* e;
  };
  std::vector<J> joints;
  std::set<std::string> joint_names;
  for (const tinyxml2::XMLElement* e = robot->FirstChildElement(); e != nullptr; e = e->NextSiblingElement()) {
    const std::string tag = e->Name();
    if (tag != "link" && tag != "joint") continue;
    const char* name = e->Attribute("name");
    if (name == nullptr || *name == '\0') return ParseError(source + ": <" + tag + ">" + Where(e) + " has no name");
    if (Status s = CheckFiniteAttributes(e); !s.ok()) return Error{s.error().code, source + ": " + s.error().message};
    if (tag == "link") {
      if (!links.insert(name).second) return InvalidArgument(source + ": duplicate link name '" + std::string(name) + "'" + Where(e));
      out.links.push_back(name);
      continue;
    }
    if (!joint_names.insert(name).second) {
      return InvalidArgument(source + ": duplicate joint name '" + std::string(name) + "'" + Where(e));
    }
    J j{name, e->Attribute("type") ? e->Attribute("type") : "", "", "", e};
    const tinyxml2::XMLElement* parent = e->FirstChildElement("parent");
    const tinyxml2::XMLElement* child = e->FirstChildElement("child");
    if (parent == nullptr || parent->Attribute("link") == nullptr) {
      return InvalidArgument(source + ": joint '" + j.name + "'" + Where(e) + " has no <parent link>");
    }
    if (child == nullptr || child->Attribute("link") == nullptr) {
      return InvalidArgument(source + ": joint '" + j.name + "'" + Where(e) + " has no <child link>");
    }
    j.parent = parent->Attribute("link");
    j.child = child->Attribute("link");
    static const std::set<std::string> kTypes = {"revolute", "continuous", "prismatic", "fixed"};
    if (!kTypes.contains(j.type)) {
      return InvalidArgument(source + ": joint '" + j.name + "'" + Where(e) + " has unsupported type '" + j.type +
                             "' (revolute, continuous, prismatic and fixed are supported)");
    }
    if (j.type == "revolute" || j.type == "prismatic") {
      const tinyxml2::XMLElement* limit = e->FirstChildElement("limit");
      if (limit == nullptr || limit->Attribute("lower") == nullptr || limit->Attribute("upper") == nullptr) {
        return InvalidArgument(source + ": " + j.type + " joint '" + j.name + "'" + Where(e) +
                               " has no <limit lower upper>");
      }
    }
    joints.push_back(j);
    out.joints.push_back(j.name);
  }
  if (out.links.empty()) return InvalidArgument(source + ": the robot has no links");
  for (const J& j : joints) {
    if (!links.contains(j.parent)) {
      return InvalidArgument(source + ": joint '" + j.name + "'" + Where(j.e) + " names parent link '" + j.parent +
                             "', which is not defined");
    }
    if (!links.contains(j.child)) {
      return InvalidArgument(source + ": joint '" + j.name + "'" + Where(j.e) + " names child link '" + j.child +
                             "', which is not defined");
    }
    if (j.parent == j.child) {
      return InvalidArgument(source + ": joint '" + j.name + "'" + Where(j.e) + " connects link '" + j.child +
                             "' to itself");
    }
    if (auto [it, fresh] = parent_of.emplace(j.child, j.name); !fresh) {
      return InvalidArgument(source + ": link '" + j.child + "' is the child of two joints, '" + it->second +
                             "' and '" + j.name + "'");
    }
    if (const tinyxml2::XMLElement* mimic = j.e->FirstChildElement("mimic"); mimic != nullptr) {
      const char* leader = mimic->Attribute("joint");
      if (leader == nullptr || !joint_names.contains(leader)) {
        return InvalidArgument(source + ": joint '" + j.name + "' mimics joint '" + (leader ? leader : "") +
                               "', which is not defined");
      }
    }
  }
  // One tree: exactly one link without a parent, and every link reachable from it.
  std::vector<std::string> roots;
  for (const std::string& l : out.links) {
    if (!parent_of.contains(l)) roots.push_back(l);
  }
  if (roots.empty()) return InvalidArgument(source + ": the joints form a cycle: every link has a parent joint");
  if (roots.size() > 1) {
    std::string names;
    for (const std::string& r : roots) names += (names.empty() ? "'" : ", '") + r + "'";
    return InvalidArgument(source + ": the robot has several root links (" + names +
                           "); every link but one must be the child of a joint");
  }
  std::map<std::string, std::vector<std::string>> children;
  for (const J& j : joints) children[j.parent].push_back(j.child);
  std::set<std::string> reached = {roots[0]};
  std::vector<std::string> stack = {roots[0]};
  while (!stack.empty()) {
    const std::string l = stack.back();
    stack.pop_back();
    for (const std::string& c : children[l]) {
      if (reached.insert(c).second) stack.push_back(c);
    }
  }
  if (reached.size() != links.size()) {
    std::string names;
    for (const std::string& l : out.links) {
      if (!reached.contains(l)) names += (names.empty() ? "'" : ", '") + l + "'";
    }
    return InvalidArgument(source + ": links " + names + " form a cycle not connected to root link '" + roots[0] + "'");
  }
  return out;
}

RigidTransform ToTransform(const urdf::Pose& pose) {
  double x, y, z, w;
  pose.rotation.getQuaternion(x, y, z, w);
  Eigen::Quaterniond q(w, x, y, z);
  return {q.normalized().toRotationMatrix(), Vec3(pose.position.x, pose.position.y, pose.position.z)};
}

bool Finite(const RigidTransform& X) { return X.R.allFinite() && X.p.allFinite(); }

}  // namespace

Result<std::shared_ptr<const MeshModel>> MeshCache::Get(const std::string& path, const Vec3& scale,
                                                        const FileAccess& files, const BuildLimits& limits) {
  const decltype(models_)::key_type key{path, {scale.x(), scale.y(), scale.z()}};
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = models_.find(key); it != models_.end()) {
    if (Status s = CheckLinkTriangles(it->second->mesh(), limits); !s.ok()) return s.error();
    return it->second;
  }
  MeshLoadOptions options;
  options.scale = scale;
  options.files = files;
  Result<TriangleMesh> mesh = LoadMesh(path, options);
  if (!mesh.ok()) return mesh.error();
  if (Status s = CheckLinkTriangles(mesh.value(), limits); !s.ok()) return s.error();
  Result<std::shared_ptr<const MeshModel>> model = MeshModel::Build(std::move(mesh).value(), {}, path);
  if (!model.ok()) return model.error();
  models_.emplace(key, model.value());
  return model;
}

size_t MeshCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return models_.size();
}

Result<std::string> ResolveMeshUri(const std::string& uri, const RobotLoadOptions& options) {
  UriResolver resolver(options);
  return resolver.Resolve(uri);
}

Result<std::shared_ptr<const RobotModel>> RobotModel::FromUrdfFile(const std::string& urdf_path,
                                                                   const std::string& srdf_path,
                                                                   const RobotLoadOptions& options) {
  Result<std::string> urdf = ReadFileUnder(options.files, urdf_path);
  if (!urdf.ok()) {
    return options.files.confined ? urdf.error() : NotFound("cannot read URDF file '" + urdf_path + "'");
  }
  std::string srdf;
  if (!srdf_path.empty()) {
    Result<std::string> text = ReadFileUnder(options.files, srdf_path);
    if (!text.ok()) {
      return options.files.confined ? text.error() : NotFound("cannot read SRDF file '" + srdf_path + "'");
    }
    srdf = std::move(text).value();
  }
  RobotLoadOptions with_dir = options;
  if (with_dir.urdf_dir.empty()) with_dir.urdf_dir = Canonical(fs::path(urdf_path).parent_path().empty()
                                                                   ? fs::path(".")
                                                                   : fs::path(urdf_path).parent_path());
  auto model = FromUrdfString(urdf.value(), srdf, with_dir);
  if (!model.ok()) {
    Error e = model.error();
    e.message = urdf_path + ": " + e.message;
    return e;
  }
  return model;
}

Result<std::vector<std::string>> RobotModel::CollisionMeshFiles(std::string_view urdf_xml,
                                                                 const RobotLoadOptions& options) {
  Result<UrdfOutline> outline = OutlineUrdf(urdf_xml, "URDF");
  if (!outline.ok()) return outline.error();
  if (Status s = CheckOutlineLimits(outline.value(), options.limits); !s.ok()) return s.error();
  const urdf::ModelInterfaceSharedPtr parsed = urdf::parseURDF(std::string(urdf_xml));
  if (!parsed) return ParseError("URDF: urdfdom could not parse the robot (its log names the element)");
  UriResolver resolver(options);
  std::vector<std::string> files;
  for (const std::string& name : outline.value().links) {
    const urdf::LinkConstSharedPtr link = parsed->getLink(name);
    if (!link) continue;
    std::string fell_back;
    for (const GeometryElement& c : UsableGeometryElements(*link, options.collision_from_visual, resolver, &fell_back)) {
      if (!c.geometry || c.geometry->type != urdf::Geometry::MESH) continue;
      const auto& m = static_cast<const urdf::Mesh&>(*c.geometry);
      Result<std::string> path = resolver.Resolve(m.filename);
      if (!path.ok()) return Error{path.error().code, "URDF: link '" + name + "': " + path.error().message};
      files.push_back(path.value());
    }
  }
  return files;
}

namespace {

// The outline comes from tinyxml2 and the parsed model from urdfdom's TinyXML, which read some names
// differently (character references, entities, white space): a name one of them lacks is refused, never
// looked up as if both agreed.
Error ReadDifferently(const std::string& what) {
  return ParseError("URDF: urdfdom reads " + what +
                    " differently from the XML outline (an entity, character reference or white space in a name?)");
}

// One joint as urdfdom parsed it; *leader: the index of the joint it mimics, or -1.
Result<Joint> ReadJoint(const urdf::Joint& uj, const std::string& name, const std::map<std::string, LinkIndex>& link_index,
                        const std::map<std::string, JointIndex>& joint_index, JointIndex* leader) {
  const auto parent = link_index.find(uj.parent_link_name);
  const auto child = link_index.find(uj.child_link_name);
  if (parent == link_index.end() || child == link_index.end()) return ReadDifferently("the links of joint '" + name + "'");
  Joint j;
  j.name = name;
  j.parent_link = parent->second;
  j.child_link = child->second;
  j.X_PJ = ToTransform(uj.parent_to_joint_origin_transform);
  if (!Finite(j.X_PJ)) return InvalidArgument("URDF: joint '" + name + "' has a non-finite <origin>");
  switch (uj.type) {
    case urdf::Joint::REVOLUTE: j.type = JointType::kRevolute; break;
    case urdf::Joint::CONTINUOUS: j.type = JointType::kContinuous; break;
    case urdf::Joint::PRISMATIC: j.type = JointType::kPrismatic; break;
    case urdf::Joint::FIXED: j.type = JointType::kFixed; break;
    default: return InvalidArgument("URDF: joint '" + name + "' has an unsupported type");
  }
  if (j.type != JointType::kFixed) {
    const Vec3 axis(uj.axis.x, uj.axis.y, uj.axis.z);
    if (!axis.allFinite() || axis.norm() < 1e-12) {
      return InvalidArgument("URDF: joint '" + name + "' has a zero or non-finite <axis>");
    }
    j.axis_J = axis.normalized();
  }
  if (j.type == JointType::kRevolute || j.type == JointType::kPrismatic) {
    if (!uj.limits) return InvalidArgument("URDF: joint '" + name + "' has no <limit>");
    j.lower = uj.limits->lower;
    j.upper = uj.limits->upper;
    if (!(j.lower <= j.upper)) {
      std::ostringstream msg;
      msg << "URDF: joint '" << name << "' has lower limit " << j.lower << " above upper limit " << j.upper;
      return InvalidArgument(msg.str());
    }
  } else if (j.type == JointType::kContinuous) {
    j.lower = -std::numeric_limits<double>::infinity();
    j.upper = std::numeric_limits<double>::infinity();
  }
  if (uj.limits) j.velocity_limit = uj.limits->velocity;
  *leader = -1;
  if (uj.mimic && j.type != JointType::kFixed) {
    const auto mimicked = joint_index.find(uj.mimic->joint_name);
    if (mimicked == joint_index.end()) return ReadDifferently("the joint that joint '" + name + "' mimics");
    *leader = mimicked->second;
    j.mimic_multiplier = uj.mimic->multiplier;
    j.mimic_offset = uj.mimic->offset;
    if (!std::isfinite(j.mimic_multiplier) || !std::isfinite(j.mimic_offset)) {
      return InvalidArgument("URDF: joint '" + name + "' has a non-finite <mimic>");
    }
  }
  return j;
}

// A link's mesh (an uploaded file's bytes, or a file through the cache) as g's scale and path say, with
// its hull; *estimated_bytes grows by its triangles and is held to the memory cap. `what` names the element.
Status LoadLinkMesh(const urdf::Mesh& m, const std::string& what, const RobotLoadOptions& load,
                    const RobotLoadOptions& options, int64_t* estimated_bytes, LinkGeometry* g) {
  Result<std::shared_ptr<const MeshModel>> mesh = Error{};
  if (g->mesh_path.starts_with(kUploadedFilePrefix)) {
    // An uploaded file: parsed from its bytes (its extension tells the format).
    const std::string& bytes = load.uploaded_files.at(m.filename);
    MeshLoadOptions mesh_options;
    mesh_options.scale = g->mesh_scale;
    Result<TriangleMesh> loaded = LoadMeshFromMemory(bytes, fs::path(m.filename).extension().string(),
                                                     "uploaded file '" + m.filename + "'", mesh_options);
    if (loaded.ok()) {
      if (Status s = CheckLinkTriangles(loaded.value(), options.limits); !s.ok()) loaded = s.error();
    }
    mesh = loaded.ok() ? MeshModel::Build(std::move(loaded).value(), {}, m.filename)
                       : Result<std::shared_ptr<const MeshModel>>(loaded.error());
  } else {
    mesh = load.mesh_cache->Get(g->mesh_path, g->mesh_scale, load.files, options.limits);
  }
  if (!mesh.ok()) return Error{mesh.error().code, what + " ('" + m.filename + "'): " + mesh.error().message};
  g->mesh = mesh.value();
  *estimated_bytes += kEstimatedBytesPerTriangle * g->mesh->num_triangles();
  if (Status s = CheckCap(*estimated_bytes, options.limits.max_memory_bytes,
                          "URDF: estimated bytes of the robot's meshes and tables", "max_memory_bytes");
      !s.ok()) {
    return s;
  }
  // A flat mesh (a plate, one triangle) has no solid hull: it keeps the hierarchy walk alone.
  if (auto hull = ConvexPolytope::Build(g->mesh->mesh(), g->mesh_path); hull.ok()) {
    g->hull = hull.value();
    g->hull_is_surface = IsHullSurface(g->mesh->mesh(), *g->hull, kHullSurfaceTolerance);
    g->hull_surface_gap = SealedHullGap(g->mesh->mesh(), *g->hull);
    g->interior = FindSolidInterior(*g->mesh, g->hull);
  }
  return {};
}

// One collision (or visual) element of link `link` as a LinkGeometry.
Result<LinkGeometry> ReadLinkGeometry(const GeometryElement& col, const std::string& link, UriResolver& resolver,
                                      const RobotLoadOptions& load, const RobotLoadOptions& options,
                                      int64_t* estimated_bytes) {
  const std::string what = "URDF: " + std::string(col.kind) + " " + std::to_string(col.index) + " of link '" + link + "'";
  if (!col.geometry) return InvalidArgument(what + " has no geometry");
  LinkGeometry g;
  g.name = col.name;
  g.X_LG = ToTransform(col.origin);
  if (!Finite(g.X_LG)) return InvalidArgument(what + " has a non-finite <origin>");
  const urdf::Geometry& geom = *col.geometry;
  switch (geom.type) {
    case urdf::Geometry::BOX: {
      const auto& d = static_cast<const urdf::Box&>(geom).dim;
      g.type = ShapeType::kBox;
      g.box_size = Vec3(d.x, d.y, d.z);
      if (!g.box_size.allFinite() || (g.box_size.array() < 0).any()) {
        return InvalidArgument(what + " has a negative or non-finite <box size>");
      }
      return g;
    }
    case urdf::Geometry::SPHERE:
      g.type = ShapeType::kSphere;
      g.radius = static_cast<const urdf::Sphere&>(geom).radius;
      if (!std::isfinite(g.radius) || g.radius < 0) return InvalidArgument(what + " has a bad <sphere radius>");
      return g;
    case urdf::Geometry::CYLINDER:
      g.type = ShapeType::kCylinder;
      g.radius = static_cast<const urdf::Cylinder&>(geom).radius;
      g.length = static_cast<const urdf::Cylinder&>(geom).length;
      if (!std::isfinite(g.radius) || g.radius < 0 || !std::isfinite(g.length) || g.length < 0) {
        return InvalidArgument(what + " has a bad <cylinder radius length>");
      }
      return g;
    case urdf::Geometry::MESH: {
      const auto& m = static_cast<const urdf::Mesh&>(geom);
      g.type = ShapeType::kMesh;
      g.mesh_scale = Vec3(m.scale.x, m.scale.y, m.scale.z);
      if (!g.mesh_scale.allFinite() || (g.mesh_scale.array() == 0).any()) {
        return InvalidArgument(what + " has a zero or non-finite <mesh scale>");
      }
      Result<std::string> path = resolver.Resolve(m.filename);
      if (!path.ok()) return Error{path.error().code, what + ": " + path.error().message};
      g.mesh_path = path.value();
      if (Status s = LoadLinkMesh(m, what, load, options, estimated_bytes, &g); !s.ok()) return s.error();
      return g;
    }
    default:
      return InvalidArgument(what + " has an unknown geometry type");
  }
}

}  // namespace

Result<std::shared_ptr<const RobotModel>> RobotModel::FromUrdfString(std::string_view urdf_xml,
                                                                     std::string_view srdf_xml,
                                                                     const RobotLoadOptions& options) {
  Result<UrdfOutline> outline = OutlineUrdf(urdf_xml, "URDF");
  if (!outline.ok()) return outline.error();
  if (Status s = CheckOutlineLimits(outline.value(), options.limits); !s.ok()) return s.error();
  const urdf::ModelInterfaceSharedPtr parsed = urdf::parseURDF(std::string(urdf_xml));
  if (!parsed) return ParseError("URDF: urdfdom could not parse the robot (its log names the element)");

  std::shared_ptr<RobotModel> model(new RobotModel());
  model->name_ = parsed->getName();
  std::map<std::string, LinkIndex> link_index;
  for (const std::string& name : outline.value().links) {
    link_index[name] = static_cast<LinkIndex>(model->links_.size());
    model->links_.push_back(Link{name, -1, {}, {}});
  }
  std::map<std::string, JointIndex> joint_index;
  for (const std::string& name : outline.value().joints) {
    joint_index[name] = static_cast<JointIndex>(joint_index.size());
  }
  // Joints, in document order.
  std::vector<JointIndex> mimic_leader;
  for (const std::string& name : outline.value().joints) {
    const urdf::JointConstSharedPtr uj = parsed->getJoint(name);
    if (!uj) return ReadDifferently("joint '" + name + "'");
    JointIndex leader = -1;
    Result<Joint> joint = ReadJoint(*uj, name, link_index, joint_index, &leader);
    if (!joint.ok()) return joint.error();
    mimic_leader.push_back(leader);
    model->joints_.push_back(std::move(joint).value());
  }

  // Collision geometry (or, with collision_from_visual, the visual geometry of links that have some).
  RobotLoadOptions load = options;
  if (!load.mesh_cache) load.mesh_cache = std::make_shared<MeshCache>();
  UriResolver resolver(load);
  std::vector<std::string> visual_fallbacks;  // "link ('uri')"
  const auto num_links = static_cast<int64_t>(model->links_.size());
  int64_t estimated_bytes = num_links * num_links * kModelBytesPerLinkPair;
  for (Link& link : model->links_) {
    if (options.stop()) return Stopped("URDF: the load was stopped at link '" + link.name + "'");
    const urdf::LinkConstSharedPtr ul = parsed->getLink(link.name);
    if (!ul) return ReadDifferently("link '" + link.name + "'");
    std::string fell_back;
    const std::vector<GeometryElement> elements =
        UsableGeometryElements(*ul, options.collision_from_visual, resolver, &fell_back);
    if (!fell_back.empty()) visual_fallbacks.push_back("'" + link.name + "' ('" + fell_back + "')");
    for (const GeometryElement& col : elements) {
      Result<LinkGeometry> g = ReadLinkGeometry(col, link.name, resolver, load, options, &estimated_bytes);
      if (!g.ok()) return g.error();
      link.geometries.push_back(std::move(g).value());
    }
  }

  if (!visual_fallbacks.empty()) {
    std::string links;
    for (const std::string& l : visual_fallbacks) links += (links.empty() ? "" : ", ") + l;
    model->warnings_.push_back("URDF: " + std::to_string(visual_fallbacks.size()) +
                               " link(s) with a missing visual mesh collide with their <collision> geometry "
                               "instead: " + links);
  }
  if (!srdf_xml.empty()) {
    Result<Srdf> srdf = ParseSrdf(srdf_xml, "SRDF");
    if (!srdf.ok()) return srdf.error();
    model->srdf_ = std::move(srdf).value();
  }
  if (Status s = model->Finalize(mimic_leader, options.stop); !s.ok()) return s.error();
  return std::shared_ptr<const RobotModel>(std::move(model));
}

}  // namespace proximity::core
