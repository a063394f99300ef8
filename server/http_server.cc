// MetricsHttpServer (metrics.h) on Boost.Beast: the HTTP server of the metrics port.
//
// One io_context thread accepts, reads and writes every connection, asynchronously, so a client that
// sends slowly or not at all holds a socket and never a thread. /metrics is answered on that thread (the
// rendering is fast); route handlers, which may block for as long as a forwarded call, run on a small
// fixed pool of workers and hand their reply back to the I/O thread to be written. When every worker is
// busy and the queue in front of them is full, a route request is answered 503 at once.
//
// What a client may hold is bounded: each request (request line, headers and body) must arrive within
// the request timeout of when the server starts waiting for it, and a keep-alive connection idle that
// long is closed; each response must be written within the write timeout; headers and bodies have size
// limits; connections are capped in total and per client address (over a cap, a new connection is
// closed as it is accepted); a connection serves at most so many requests before `Connection: close`.

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "server/log.h"
#include "server/metrics.h"

namespace proximity::server {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

constexpr const char* kMetricsType = "text/plain; version=0.0.4; charset=utf-8";
constexpr const char* kTextType = "text/plain; charset=utf-8";
constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
// After a response that closes the connection, what the client still sends is read (and dropped) for
// this long at most, so that closing does not reset the connection before the client read the response.
constexpr auto kLingerTime = std::chrono::seconds(2);
// The largest timeout accepted, seconds (a day).
constexpr double kMaxTimeoutSeconds = 86400.0;

// Beast's string_view is Boost's.
std::string_view Std(beast::string_view s) { return {s.data(), s.size()}; }

Clock::duration Duration(double seconds) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The path with its %XX escapes decoded (a malformed escape is kept as it is).
std::string PercentDecoded(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && HexDigit(s[i + 1]) >= 0 && HexDigit(s[i + 2]) >= 0) {
      out.push_back(static_cast<char>(HexDigit(s[i + 1]) * 16 + HexDigit(s[i + 2])));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

bool EqualsIgnoringCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

std::string Trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return std::string(s);
}

// Whether the error is one of the HTTP parser's (a malformed or oversized request), rather than the
// connection's end.
bool IsParseError(const beast::error_code& ec) {
  return &ec.category() == &beast::error_code(http::error::bad_target).category();
}

}  // namespace

struct MetricsHttpServer::Impl {
  struct Route {
    std::string method;
    std::regex pattern;
    std::function<HttpReply(const HttpRequest&)> handler;
  };
  class Connection;

  // Declared first so that it is destroyed last: the handlers it still holds own connections.
  asio::io_context io{1};
  tcp::acceptor acceptor{io};
  asio::steady_timer accept_retry{io};
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  std::thread io_thread;

  const Metrics* metrics = nullptr;
  std::vector<Route> routes;
  uint64_t max_body_bytes = 0;
  HttpServerLimits limits;
  Clock::duration request_timeout{};
  Clock::duration write_timeout{};

  // The I/O thread's own.
  bool closing = false;
  int open = 0;
  std::map<asio::ip::address, int> per_address;
  uint64_t next_id = 0;
  std::unordered_map<uint64_t, std::weak_ptr<Connection>> live;

  // The workers and their queue.
  std::mutex mutex;
  std::condition_variable wake;
  std::deque<std::function<void()>> jobs;
  bool stopping = false;
  std::vector<std::thread> workers;

  void Accept();
  void Admit(tcp::socket socket);
  void Release(uint64_t id, const asio::ip::address& peer);
  void CloseAll();
  // Queues a route handler's job; false when the queue is full (or the server stops).
  bool Submit(std::function<void()> job);
  void Work();
  void RunIo();
};

class MetricsHttpServer::Impl::Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(Impl* server, tcp::socket socket, asio::ip::address peer, uint64_t id)
      : server_(server), stream_(std::move(socket)), peer_(std::move(peer)), id_(id) {}

  void Start() { ReadHeader(); }
  // Ends what the connection is doing: its pending operations complete with an error, then Finish.
  void Close() { stream_.close(); }

 private:
  void ReadHeader() {
    parser_.emplace();
    parser_->header_limit(server_->limits.max_header_bytes);
    parser_->body_limit(server_->max_body_bytes);
    head_ = false;
    version_ = 11;
    // One deadline for the whole request, and for the wait before it on a kept-alive connection:
    // the stream's expiry is a point in time that every read below keeps.
    stream_.expires_after(server_->request_timeout);
    http::async_read_header(stream_, buffer_, *parser_,
                            [self = shared_from_this()](beast::error_code ec, size_t) { self->OnHeader(ec); });
  }

  void OnHeader(beast::error_code ec) {
    if (ec) return OnReadError(ec);
    if (server_->closing) return Finish();
    version_ = parser_->get().version();
    if (parser_->is_done()) return Dispatch();
    const std::string_view expect = Std(parser_->get()[http::field::expect]);
    if (version_ >= 11 && EqualsIgnoringCase(Trimmed(expect), "100-continue")) {
      asio::async_write(stream_, asio::buffer(kContinue.data(), kContinue.size()),
                        [self = shared_from_this()](beast::error_code write_ec, size_t) {
                          if (write_ec) return self->Finish();
                          self->ReadBody();
                        });
      return;
    }
    ReadBody();
  }

  void ReadBody() {
    http::async_read(stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec) return self->OnReadError(ec);
      if (self->server_->closing) return self->Finish();
      self->Dispatch();
    });
  }

  void OnReadError(const beast::error_code& ec) {
    if (ec == http::error::body_limit) {
      return Answer(413, kTextType,
                    "request body larger than " + std::to_string(server_->max_body_bytes) + " bytes\n", false);
    }
    if (ec == http::error::header_limit) {
      return Answer(431, kTextType, "request headers larger than " + std::to_string(server_->limits.max_header_bytes) +
                                        " bytes\n", false);
    }
    // A request cut short (end of stream, timeout) gets no answer; a malformed one gets 400.
    if (IsParseError(ec) && ec != http::error::end_of_stream && ec != http::error::partial_message) {
      return Answer(400, kTextType, "bad request: " + ec.message() + "\n", false);
    }
    Finish();
  }

  void Dispatch() {
    auto& request = parser_->get();
    ++served_;
    const bool keep_alive = request.keep_alive() && served_ < server_->limits.max_requests_per_connection;
    head_ = request.method() == http::verb::head;
    const std::string_view target = Std(request.target());
    if (target.empty() || target.front() != '/') return Answer(400, kTextType, "bad request target\n", false);
    if (request.count(http::field::host) > 1) return Answer(400, kTextType, "more than one Host header\n", false);
    const std::string path = PercentDecoded(target.substr(0, target.find('?')));
    const bool get = request.method() == http::verb::get || head_;

    if (path == "/metrics") {
      if (!get) return Answer(405, kTextType, "method not allowed\n", keep_alive, "GET, HEAD");
      return Answer(200, kMetricsType, server_->metrics->RenderText(), keep_alive);
    }
    const std::string method(Std(request.method_string()));
    const Route* route = nullptr;
    std::vector<std::string> matches;
    std::string allow;
    for (const Route& r : server_->routes) {
      std::smatch m;
      if (!std::regex_match(path, m, r.pattern)) continue;
      allow += (allow.empty() ? "" : ", ") + r.method + (r.method == "GET" ? ", HEAD" : "");
      if (r.method == method || (head_ && r.method == "GET")) {
        route = &r;
        for (size_t i = 1; i < m.size(); ++i) matches.push_back(m[i].str());
        break;
      }
    }
    if (allow.empty()) return Answer(404, kTextType, "not found\n", keep_alive);
    if (route == nullptr) return Answer(405, kTextType, "method not allowed\n", keep_alive, allow);

    HttpRequest call;
    call.path = path;
    call.body = std::move(request.body());
    call.authorization = std::string(Std(request[http::field::authorization]));
    call.matches = std::move(matches);
    call.content_type = std::string(Std(request[http::field::content_type]));
    call.host = std::string(Std(request[http::field::host]));
    call.origin = std::string(Std(request[http::field::origin]));
    const bool queued = server_->Submit(
        [self = shared_from_this(), route, call = std::move(call), keep_alive]() mutable {
          HttpReply reply;
          try {
            reply = route->handler(call);
          } catch (const std::exception& e) {
            LogEvent(spdlog::level::err, "http handler failed", {{"path", call.path}, {"error", e.what()}});
            reply = {500, kTextType, "internal error\n"};
          }
          Impl* server = self->server_;
          asio::post(server->io, [self = std::move(self), reply = std::move(reply), keep_alive]() mutable {
            self->Answer(reply.status, reply.content_type, std::move(reply.body), keep_alive);
          });
        });
    if (!queued) Answer(503, kTextType, "busy: every worker of the HTTP port is taken, try again\n", keep_alive);
  }

  void Answer(int status, const std::string& content_type, std::string body, bool keep_alive,
              const std::string& allow = "") {
    if (finished_) return;
    keep_alive_ = keep_alive && !server_->closing;
    response_ = http::response<http::string_body>();
    response_.version(version_);
    response_.result(static_cast<unsigned>(status >= 100 && status <= 999 ? status : 500));
    response_.set(http::field::server, "proximityd");
    response_.set(http::field::content_type, content_type);
    if (!allow.empty()) response_.set(http::field::allow, allow);
    response_.body() = std::move(body);
    response_.keep_alive(keep_alive_);
    response_.prepare_payload();
    if (head_) {
      const size_t length = response_.body().size();
      response_.body().clear();
      response_.content_length(length);
    }
    stream_.expires_after(server_->write_timeout);
    http::async_write(stream_, response_, [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec) return self->Finish();
      if (!self->keep_alive_ || self->server_->closing) return self->Linger();
      self->ReadHeader();
    });
  }

  // The response is out and the connection closes: the sending side first, then, once the client
  // closed its side (or after kLingerTime), the socket.
  void Linger() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    if (ec) return Finish();
    stream_.expires_after(std::min<Clock::duration>(kLingerTime, server_->request_timeout));
    Drain();
  }

  void Drain() {
    stream_.async_read_some(asio::buffer(scratch_), [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec || self->server_->closing) return self->Finish();
      self->Drain();
    });
  }

  void Finish() {
    if (finished_) return;
    finished_ = true;
    stream_.close();
    server_->Release(id_, peer_);
  }

  Impl* server_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::response<http::string_body> response_;
  std::array<char, 4096> scratch_{};
  asio::ip::address peer_;
  uint64_t id_;
  int served_ = 0;
  unsigned version_ = 11;
  bool head_ = false;
  bool keep_alive_ = false;
  bool finished_ = false;
};

void MetricsHttpServer::Impl::Accept() {
  acceptor.async_accept([this](beast::error_code ec, tcp::socket socket) {
    if (closing || !acceptor.is_open()) return;
    if (ec) {
      if (ec == asio::error::operation_aborted) return;
      // Out of file descriptors, or a connection gone before it was accepted: try again shortly
      // rather than spin.
      accept_retry.expires_after(std::chrono::milliseconds(100));
      accept_retry.async_wait([this](beast::error_code wait_ec) {
        if (!wait_ec && !closing) Accept();
      });
      return;
    }
    Admit(std::move(socket));
    Accept();
  });
}

void MetricsHttpServer::Impl::Admit(tcp::socket socket) {
  beast::error_code ec;
  const tcp::endpoint peer = socket.remote_endpoint(ec);
  if (ec) return;  // gone already; the socket closes as it goes out of scope
  const asio::ip::address address = peer.address();
  const auto it = per_address.find(address);
  const int from_address = it == per_address.end() ? 0 : it->second;
  if (open >= limits.max_connections || from_address >= limits.max_connections_per_address) {
    socket.close(ec);
    return;
  }
  ++open;
  ++per_address[address];
  socket.set_option(tcp::no_delay(true), ec);
  const uint64_t id = next_id++;
  auto connection = std::make_shared<Connection>(this, std::move(socket), address, id);
  live.emplace(id, connection);
  connection->Start();
}

void MetricsHttpServer::Impl::Release(uint64_t id, const asio::ip::address& peer) {
  if (live.erase(id) == 0) return;
  --open;
  if (const auto it = per_address.find(peer); it != per_address.end() && --it->second <= 0) per_address.erase(it);
}

void MetricsHttpServer::Impl::CloseAll() {
  closing = true;
  beast::error_code ec;
  acceptor.close(ec);
  accept_retry.cancel();
  std::vector<std::shared_ptr<Connection>> connections;
  for (const auto& [id, weak] : live) {
    if (auto c = weak.lock()) connections.push_back(std::move(c));
  }
  for (const auto& c : connections) c->Close();
}

bool MetricsHttpServer::Impl::Submit(std::function<void()> job) {
  {
    std::lock_guard lock(mutex);
    if (stopping || static_cast<int>(jobs.size()) >= limits.max_queued) return false;
    jobs.push_back(std::move(job));
  }
  wake.notify_one();
  return true;
}

void MetricsHttpServer::Impl::Work() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock lock(mutex);
      wake.wait(lock, [this] { return stopping || !jobs.empty(); });
      if (stopping) return;
      job = std::move(jobs.front());
      jobs.pop_front();
    }
    job();
  }
}

void MetricsHttpServer::Impl::RunIo() {
  for (;;) {
    try {
      io.run();
      return;
    } catch (const std::exception& e) {
      LogEvent(spdlog::level::err, "http server error", {{"error", e.what()}});
    }
  }
}

MetricsHttpServer::MetricsHttpServer() : impl_(std::make_unique<Impl>()) {}

MetricsHttpServer::~MetricsHttpServer() { Stop(); }

core::Status MetricsHttpServer::Start(const std::string& address, const Metrics* metrics, std::vector<HttpRoute> routes,
                                      int64_t max_body_bytes, const HttpServerLimits& limits) {
  if (impl_->io_thread.joinable()) return core::InvalidArgument("the metrics HTTP server is already started");
  std::string host;
  int port = 0;
  if (!SplitHostPort(address, &host, &port)) {
    return core::InvalidArgument("metrics address '" + address + "' is not host:port");
  }
  const auto timeout_ok = [](double s) { return std::isfinite(s) && s > 0.0 && s <= kMaxTimeoutSeconds; };
  if (!timeout_ok(limits.request_timeout_seconds) || !timeout_ok(limits.write_timeout_seconds)) {
    return core::InvalidArgument("HTTP request and write timeouts must be in (0, " +
                                 std::to_string(static_cast<int>(kMaxTimeoutSeconds)) + "] seconds, got " +
                                 std::to_string(limits.request_timeout_seconds) + " and " +
                                 std::to_string(limits.write_timeout_seconds));
  }
  if (limits.max_connections < 1 || limits.max_connections_per_address < 1 || limits.max_requests_per_connection < 1 ||
      limits.max_header_bytes < 256 || limits.workers < 1 || limits.max_queued < 0) {
    return core::InvalidArgument("HTTP server limits out of range");
  }
  Impl& s = *impl_;
  s.metrics = metrics;
  s.max_body_bytes = static_cast<uint64_t>(std::max<int64_t>(max_body_bytes, 0));
  s.limits = limits;
  s.request_timeout = Duration(limits.request_timeout_seconds);
  s.write_timeout = Duration(limits.write_timeout_seconds);
  s.routes.clear();
  for (HttpRoute& route : routes) {
    try {
      s.routes.push_back({route.method, std::regex(route.pattern), std::move(route.handler)});
    } catch (const std::regex_error& e) {
      return core::InvalidArgument("HTTP route pattern '" + route.pattern + "': " + e.what());
    }
  }

  // The address as a literal, else resolved (a name such as localhost); the first endpoint that binds.
  beast::error_code ec;
  std::vector<tcp::endpoint> endpoints;
  if (const asio::ip::address ip = asio::ip::make_address(host, ec); !ec) {
    endpoints.emplace_back(ip, static_cast<unsigned short>(port));
  } else {
    tcp::resolver resolver(s.io);
    const auto results = resolver.resolve(host, std::to_string(port),
                                          tcp::resolver::passive | tcp::resolver::numeric_service, ec);
    if (ec) return core::InvalidArgument("cannot listen for metrics on " + address + ": " + ec.message());
    for (const auto& entry : results) endpoints.push_back(entry.endpoint());
  }
  std::string why = "no address";
  for (const tcp::endpoint& endpoint : endpoints) {
    // SO_REUSEADDR allows a quick restart; SO_REUSEPORT is left off, so that a second process cannot
    // bind a busy port.
    s.acceptor.open(endpoint.protocol(), ec);
    if (!ec) s.acceptor.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) s.acceptor.bind(endpoint, ec);
    if (!ec) s.acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (!ec) break;
    why = ec.message();
    beast::error_code ignored;
    s.acceptor.close(ignored);
  }
  if (!s.acceptor.is_open()) {
    return core::InvalidArgument("cannot listen for metrics on " + address +
                                 (port != 0 ? " (is the port in use?): " : ": ") + why);
  }
  const tcp::endpoint bound = s.acceptor.local_endpoint(ec);
  if (ec) {
    beast::error_code ignored;
    s.acceptor.close(ignored);
    return core::InvalidArgument("cannot listen for metrics on " + address + ": " + ec.message());
  }
  port_ = bound.port();

  s.work.emplace(s.io.get_executor());
  s.Accept();
  for (int i = 0; i < limits.workers; ++i) s.workers.emplace_back([impl = impl_.get()] { impl->Work(); });
  s.io_thread = std::thread([impl = impl_.get()] { impl->RunIo(); });
  return {};
}

void MetricsHttpServer::Stop() {
  Impl& s = *impl_;
  if (!s.io_thread.joinable()) return;
  // Closing the port and every connection happens on the I/O thread, which owns them.
  asio::post(s.io, [impl = impl_.get()] { impl->CloseAll(); });
  std::deque<std::function<void()>> dropped;
  {
    std::lock_guard lock(s.mutex);
    s.stopping = true;
    dropped.swap(s.jobs);
  }
  s.wake.notify_all();
  dropped.clear();
  // A handler running is waited for; its reply then finds its connection closed.
  for (std::thread& worker : s.workers) worker.join();
  s.workers.clear();
  s.work.reset();
  s.io_thread.join();
}

}  // namespace proximity::server
