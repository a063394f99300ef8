#pragma once
// A proximityd child process for the client tests: the daemon built with this tree (PROXIMITYD_PATH),
// started on a free loopback port with its built-in default scene, its stderr captured; and the
// default scene built in process for reference.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "proximity/core/scene/scene.h"
#include "proximity/default_scene/default_scene.h"

extern char** environ;

namespace proximity::clients::test_daemon {

using Clock = std::chrono::steady_clock;

// A proximityd child process with its stderr captured.
class Daemon {
 public:
  // Starts proximityd on 127.0.0.1:`port` (0: a free one) with `threads` worker threads and waits (up
  // to two minutes) for its "listening on" line.
  static std::unique_ptr<Daemon> Start(std::string* error, int port = 0, int threads = 2) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
      *error = "pipe2 failed";
      return nullptr;
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    std::vector<std::string> args = {PROXIMITYD_PATH, "--listen", "127.0.0.1:" + std::to_string(port),
                                     "--metrics-listen", "127.0.0.1:0", "--threads", std::to_string(threads),
                                     "--log-level", "warn", "--log-format", "text"};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    auto d = std::unique_ptr<Daemon>(new Daemon());
    const int rc = posix_spawn(&d->pid_, PROXIMITYD_PATH, &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    close(fds[1]);
    if (rc != 0) {
      close(fds[0]);
      *error = std::string("cannot start ") + PROXIMITYD_PATH + ": " + std::strerror(rc);
      return nullptr;
    }
    d->fd_ = fds[0];
    // Read stderr until the line that names the port.
    const std::string marker = "proximityd listening on ";
    const auto until = Clock::now() + std::chrono::minutes(2);
    std::string text;
    for (;;) {
      const size_t at = text.find(marker);
      const size_t end = at == std::string::npos ? at : text.find('\n', at);
      if (end != std::string::npos) {
        d->target_ = text.substr(at + marker.size(), end - at - marker.size());
        break;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
      pollfd p{d->fd_, POLLIN, 0};
      char buf[4096];
      ssize_t got = 0;
      if (left <= 0 || poll(&p, 1, static_cast<int>(left)) <= 0 || (got = read(d->fd_, buf, sizeof(buf))) <= 0) {
        *error = "proximityd did not report its port; its stderr:\n" + text;
        return nullptr;  // the destructor kills it
      }
      text.append(buf, static_cast<size_t>(got));
    }
    d->log_ = text;
    // Keep draining stderr so that the daemon never blocks on a full pipe.
    d->drain_ = std::thread([raw = d.get()] {
      char buf[4096];
      ssize_t got;
      while ((got = read(raw->fd_, buf, sizeof(buf))) > 0) {
        std::lock_guard lock(raw->mutex_);
        raw->log_.append(buf, static_cast<size_t>(got));
      }
    });
    return d;
  }

  ~Daemon() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (drain_.joinable()) drain_.join();
    if (fd_ >= 0) close(fd_);
  }

  const std::string& target() const { return target_; }
  int port() const { return std::stoi(target_.substr(target_.rfind(':') + 1)); }

  // SIGKILL: no drain; calls in flight on it are cut.
  void Kill() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
  }

  // SIGTERM, then waits up to a minute: the exit code, or -1 (killed by a signal or still running,
  // which is then killed).
  int Terminate() {
    kill(pid_, SIGTERM);
    int status = 0;
    const auto until = Clock::now() + std::chrono::minutes(1);
    pid_t done = 0;
    while ((done = waitpid(pid_, &status, WNOHANG)) == 0 && Clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (done != pid_) return -1;  // the destructor kills it
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  std::string log() {
    std::lock_guard lock(mutex_);
    return log_;
  }

 private:
  Daemon() = default;
  pid_t pid_ = -1;
  int fd_ = -1;
  std::string target_;
  std::thread drain_;
  std::mutex mutex_;
  std::string log_;
};

inline std::shared_ptr<const core::Scene> DefaultSceneInProcess() {
  auto d = scenes::DefaultSceneDescription();
  EXPECT_TRUE(d.ok()) << d.error().message;
  if (!d.ok()) return nullptr;
  auto scene = core::Scene::Build(std::move(d).value());
  EXPECT_TRUE(scene.ok()) << scene.error().message;
  return scene.ok() ? scene.value() : nullptr;
}

// A loopback port nothing listens on (bound, read and released).
inline int FreePort() {
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof(a);
  if (bind(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    close(s);
    return -1;
  }
  close(s);
  return ntohs(a.sin_port);
}

}  // namespace proximity::clients::test_daemon
