#include "server/viewer.h"

#include <google/protobuf/util/json_util.h>
#include <grpcpp/client_context.h>

#include <chrono>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
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
      {"CheckState", Forwarder(&Stub::CheckState)},
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

// A script file of libjs-three, read once; the reply when it could not be.
HttpReply Script(const std::string& path, std::vector<std::string>* warnings) {
  auto text = core::ReadFileUnder({}, path);
  if (text.ok()) return {200, "text/javascript; charset=utf-8", std::move(text).value()};
  warnings->push_back("viewer: " + text.error().message + " (apt-get install libjs-three)");
  return {404, "text/plain; charset=utf-8", path + " is not installed on the server (apt-get install libjs-three)"};
}

}  // namespace

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
  routes.push_back({"POST", R"(/viewer/api/(\w+))", [stub, api, call_seconds](const HttpRequest& request) {
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
