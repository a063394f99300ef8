#include "server/viewer.h"

#include <google/protobuf/util/json_util.h>
#include <grpcpp/client_context.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string_view>
#include <utility>

#include "proximity/core/base/file_access.h"
#include "proximity/v1/proximity.grpc.pb.h"
#include "server/call.h"
#include "server/errors.h"

namespace proximity::server {

namespace {

namespace v1 = ::proximity::v1;
using Stub = v1::ProximityService::Stub;

HttpReply ErrorReply(const grpc::Status& status) {
  const nlohmann::json body = {{"code", GrpcCodeName(status.error_code())},
                               {"message", Bounded(status.error_message(), kMaxMessageBytes)}};
  return {HttpStatus(status.error_code()), "application/json", body.dump()};
}

// One forwarded method: the JSON request body in, the JSON response (or error) out.
using Forward = std::function<HttpReply(Stub&, grpc::ClientContext*, const std::string&)>;

template <class Request, class Response>
Forward Forwarder(grpc::Status (Stub::*method)(grpc::ClientContext*, const Request&, Response*)) {
  return [method](Stub& stub, grpc::ClientContext* context, const std::string& body) -> HttpReply {
    Request request;
    google::protobuf::util::JsonParseOptions parse;
    parse.ignore_unknown_fields = false;
    if (auto parsed = google::protobuf::util::JsonStringToMessage(body.empty() ? "{}" : body, &request, parse);
        !parsed.ok()) {
      return ErrorReply(BadRequestBody(parsed.ToString()));
    }
    Response response;
    if (const grpc::Status status = (stub.*method)(context, request, &response); !status.ok()) {
      return ErrorReply(status);
    }
    google::protobuf::util::JsonPrintOptions print;
    print.always_print_primitive_fields = true;
    print.preserve_proto_field_names = true;
    std::string out;
    if (auto printed = google::protobuf::util::MessageToJsonString(response, &out, print); !printed.ok()) {
      return ErrorReply(JsonEncodingFailed(printed.ToString()));
    }
    return {200, "application/json", std::move(out)};
  };
}

const std::map<std::string, Forward, std::less<>>& Methods() {
  static const std::map<std::string, Forward, std::less<>> methods = {
      {"ListScenes", Forwarder(&Stub::ListScenes)},
      {"GetScene", Forwarder(&Stub::GetScene)},
      {"GetSceneGeometry", Forwarder(&Stub::GetSceneGeometry)},
      {"GetLinkPoses", Forwarder(&Stub::GetLinkPoses)},
      {"GetIK", Forwarder(&Stub::GetIK)},
      {"CheckState", Forwarder(&Stub::CheckState)},
      {"CheckStates", Forwarder(&Stub::CheckStates)},
      {"CheckPath", Forwarder(&Stub::CheckPath)},
      {"ComputeDistance", Forwarder(&Stub::ComputeDistance)},
      {"ComputeContacts", Forwarder(&Stub::ComputeContacts)},
  };
  return methods;
}

std::string MethodList() {
  std::string names;
  for (const auto& [name, forward] : Methods()) names += (names.empty() ? "" : ", ") + name;
  return names;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// An IPv6 host in brackets, as it appears in a Host header.
std::string Bracketed(const std::string& host) {
  return host.find(':') != std::string::npos && host.front() != '[' ? "[" + host + "]" : host;
}

// HOST or HOST:PORT (IPv6 hosts in brackets; a bare IPv6 address is taken as a host): the host
// (bracketed), and the port or -1. False when malformed.
bool ParseHostEntry(std::string_view entry, std::string* host, int* port) {
  *port = -1;
  if (entry.empty() || entry.size() > 255) return false;
  for (const char c : entry) {
    if (std::isspace(static_cast<unsigned char>(c)) || std::iscntrl(static_cast<unsigned char>(c)) ||
        std::string_view("/@?#,;\"'\\").find(c) != std::string_view::npos) {
      return false;
    }
  }
  std::string_view port_text;
  if (entry.front() == '[') {
    const size_t close = entry.find(']');
    if (close == std::string_view::npos || close < 2) return false;
    *host = std::string(entry.substr(0, close + 1));
    const std::string_view rest = entry.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return false;
      port_text = rest.substr(1);
      if (port_text.empty()) return false;
    }
  } else {
    const size_t colons = static_cast<size_t>(std::count(entry.begin(), entry.end(), ':'));
    if (colons == 0) {
      *host = std::string(entry);
    } else if (colons == 1) {
      const size_t colon = entry.find(':');
      *host = std::string(entry.substr(0, colon));
      port_text = entry.substr(colon + 1);
      if (host->empty() || port_text.empty()) return false;
    } else {
      host->assign(1, '[');
      host->append(entry);
      host->push_back(']');
    }
  }
  if (host->find_first_of("[]") != std::string::npos && host->front() != '[') return false;
  if (!port_text.empty()) {
    if (port_text.size() > 5 || !std::all_of(port_text.begin(), port_text.end(), [](char c) {
          return c >= '0' && c <= '9';
        })) {
      return false;
    }
    *port = std::stoi(std::string(port_text));
    if (*port < 1 || *port > 65535) return false;
  }
  *host = Lower(*host);
  return true;
}

// Who may use the API: the Host values (lowercase) that name this server.
class HostCheck {
 public:
  explicit HostCheck(const ViewerOptions& options) : bound_port_(options.bound_port) {
    std::string host;
    int port = 0;
    if (SplitHostPort(options.listen_address, &host, &port)) listen_host_ = Lower(Bracketed(host));
    for (const std::string& entry : options.allowed_hosts) {
      int entry_port = -1;
      if (ParseHostEntry(entry, &host, &entry_port)) extra_.emplace_back(host, entry_port);
    }
  }

  // The refusal of a call whose Host or Origin does not name this server, or nullopt.
  std::optional<HttpReply> Refuse(const HttpRequest& request) const {
    const std::set<std::string>& allowed = Allowed();
    const std::string host = Lower(Trim(request.host));
    if (allowed.count(host) == 0) return ErrorReply(ViewerForeignHost("Host", host));
    if (!request.origin.empty()) {
      const std::string origin = Lower(Trim(request.origin));
      std::string_view authority = origin;
      bool web = false;
      for (const std::string_view scheme : {"http://", "https://"}) {
        if (authority.substr(0, scheme.size()) == scheme) {
          authority.remove_prefix(scheme.size());
          web = true;
          break;
        }
      }
      if (!web || allowed.count(std::string(authority)) == 0) return ErrorReply(ViewerForeignHost("Origin", origin));
    }
    return std::nullopt;
  }

 private:
  // Made on the first request, once the port is bound (it does not change afterwards).
  const std::set<std::string>& Allowed() const {
    std::call_once(allowed_once_, [this] { allowed_ = MakeAllowed(); });
    return allowed_;
  }

  std::set<std::string> MakeAllowed() const {
    const int port = bound_port_ ? bound_port_() : 0;
    const std::string at = ':' + std::to_string(port);
    std::set<std::string> allowed;
    for (const std::string& host : {listen_host_, std::string("localhost"), std::string("127.0.0.1"),
                                    std::string("[::1]")}) {
      if (host.empty()) continue;
      allowed.insert(host + at);
      if (port == 80) allowed.insert(host);  // a browser leaves the default port out
    }
    for (const auto& [host, port_given] : extra_) {
      if (port_given > 0) {
        allowed.insert(host + ':' + std::to_string(port_given));
      } else {
        allowed.insert(host);
        allowed.insert(host + at);
      }
    }
    return allowed;
  }

  std::function<int()> bound_port_;
  std::string listen_host_;
  std::vector<std::pair<std::string, int>> extra_;
  mutable std::once_flag allowed_once_;
  mutable std::set<std::string> allowed_;
};

// Whether a Content-Type is JSON: application/json, with at most a charset parameter.
bool IsJson(std::string_view content_type) {
  const size_t semicolon = content_type.find(';');
  if (Lower(Trim(content_type.substr(0, semicolon))) != "application/json") return false;
  std::string_view rest = semicolon == std::string_view::npos ? std::string_view() : content_type.substr(semicolon + 1);
  while (!rest.empty()) {
    const size_t next = rest.find(';');
    const std::string parameter = Lower(Trim(rest.substr(0, next)));
    if (!parameter.empty() && parameter.rfind("charset=", 0) != 0) return false;
    rest = next == std::string_view::npos ? std::string_view() : rest.substr(next + 1);
  }
  return true;
}

// A script file of libjs-three, read once; the reply when it could not be.
HttpReply Script(const std::string& path, std::vector<std::string>* warnings) {
  auto text = core::ReadFileUnder({}, path);
  if (text.ok()) return {200, "text/javascript; charset=utf-8", std::move(text).value()};
  warnings->push_back("viewer: " + text.error().message + " (apt-get install libjs-three)");
  return {404, "text/plain; charset=utf-8", path + " is not installed on the server (apt-get install libjs-three)"};
}

}  // namespace

std::string AllowedHostError(const std::string& entry) {
  std::string host;
  int port = -1;
  if (ParseHostEntry(entry, &host, &port)) return "";
  return "--viewer-allowed-host: expected HOST or HOST:PORT (IPv6 hosts in brackets, port 1-65535), got '" +
         Bounded(entry, 200) + "'";
}

std::vector<HttpRoute> ViewerRoutes(std::shared_ptr<grpc::Channel> channel, const ViewerOptions& options,
                                    std::vector<std::string>* warnings) {
  std::vector<HttpRoute> routes;
  routes.push_back({"GET", "/viewer/?", [](const HttpRequest&) {
                      return HttpReply{200, "text/html; charset=utf-8", kViewerPage};
                    }});
  for (const auto& [route, file] : {std::pair{"/viewer/three.min.js", "/build/three.min.js"},
                                    std::pair{"/viewer/OrbitControls.js", "/examples/js/controls/OrbitControls.js"}}) {
    routes.push_back({"GET", route, [reply = Script(options.three_dir + file, warnings)](const HttpRequest&) {
                        return reply;
                      }});
  }
  auto stub = std::shared_ptr<Stub>(v1::ProximityService::NewStub(channel));
  const bool api = options.api_enabled;
  const double call_seconds = options.call_seconds;
  auto hosts = std::make_shared<const HostCheck>(options);
  routes.push_back({"POST", R"(/viewer/api/(\w+))", [stub, api, call_seconds, hosts](const HttpRequest& request) {
                      if (auto refused = hosts->Refuse(request)) return *std::move(refused);
                      if (!IsJson(request.content_type)) {
                        HttpReply reply = ErrorReply(ViewerNotJson(request.content_type));
                        reply.status = 415;  // Unsupported Media Type, which no gRPC code maps to
                        return reply;
                      }
                      if (!api) return ErrorReply(ViewerNeedsClientCertificates());
                      const auto it = Methods().find(request.matches.at(0));
                      if (it == Methods().end()) {
                        return ErrorReply(ViewerUnknownMethod(request.matches[0], MethodList()));
                      }
                      grpc::ClientContext context;
                      context.set_deadline(TimeAfter(std::chrono::system_clock::now(), call_seconds));
                      if (!request.authorization.empty()) {
                        context.AddMetadata("authorization", request.authorization);
                      }
                      return it->second(*stub, &context, request.body);
                    }});
  return routes;
}

}  // namespace proximity::server
