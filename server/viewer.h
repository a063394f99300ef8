#pragma once
/// @file
/// The viewer on the HTTP (metrics) port. GET /viewer serves a page built into the binary
/// (server/viewer/viewer.html) that lists the scenes and draws one at a state, or along a path with its
/// contacts, with three.js from Debian's libjs-three (GET /viewer/three.min.js and
/// /viewer/OrbitControls.js; no CDN). The page's data comes from POST /viewer/api/<Method>: a
/// proximity.v1 request in protobuf's JSON mapping (field names as in the .proto), forwarded to the
/// service over an in-process channel and answered with the response in the same mapping, or
/// {"code", "message"} with an HTTP status for the gRPC code (HttpStatus). Every forwarded call goes
/// through the service's opening like any gRPC call: the bearer token (the request's Authorization
/// header), --max-concurrent-calls, --max-message-bytes, --max-call-seconds, metrics and logs. Only
/// read-only methods are forwarded: ListScenes, GetScene, GetSceneGeometry, GetLinkPoses, GetIK, CheckState,
/// CheckStates, CheckPath, ComputeDistance, ComputeContacts. No request names a file: the two script files are read once at start,
/// from the folder the operator gave (Debian's by default).
///
/// Other web pages must not use the API through the browser of someone who opens them: a call must say
/// `Content-Type: application/json` (which a page of another origin cannot send without a CORS preflight,
/// which the API does not answer), else 415; its Host header must name this server (the metrics address,
/// localhost, 127.0.0.1 or [::1] at the bound port, or a --viewer-allowed-host), else 403, which defeats
/// DNS rebinding; and an Origin header, when sent, must be http:// or https:// and one of those hosts, else 403.

#include <grpcpp/channel.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "server/metrics.h"

namespace proximity::server {

struct ViewerOptions {
  /// libjs-three's folder: build/three.min.js and examples/js/controls/OrbitControls.js are served.
  std::string three_dir = "/usr/share/javascript/three";
  /// The deadline of each forwarded call, seconds (the service's --max-call-seconds also applies).
  double call_seconds = 60.0;
  /// False when the server requires client certificates, which the HTTP port cannot check: the page
  /// is served and the API refuses every call (PERMISSION_DENIED, 403).
  bool api_enabled = true;
  /// The metrics port's address as given (host:port): its host at the bound port is an allowed Host.
  std::string listen_address;
  /// The port the metrics server bound (known only once it listens: port 0 picks one).
  std::function<int()> bound_port;
  /// More Host header values the API accepts (--viewer-allowed-host): HOST (then HOST alone, as behind
  /// a proxy on a default port, and HOST at the bound port) or HOST:PORT (exactly that).
  std::vector<std::string> allowed_hosts;
};

/// Why `entry` is not a valid --viewer-allowed-host (HOST or HOST:PORT, IPv6 hosts in brackets), or "".
std::string AllowedHostError(const std::string& entry);

/// The viewer's routes; `channel` reaches the service in process. `warnings` gets a sentence for each
/// script file that could not be read (the page then says what to install).
std::vector<HttpRoute> ViewerRoutes(std::shared_ptr<grpc::Channel> channel, const ViewerOptions& options,
                                    std::vector<std::string>* warnings);

/// The page (viewer.html), as built into the binary.
extern const char* const kViewerPage;

}  // namespace proximity::server
