// The C++ remote client riding through replica loss (its channel: remote_channel.cc), against real proximityd
// processes on loopback ports: a scene uploaded with RemoteScene::Create (the KR5 URDF with its meshes in the
// request, and a world of our own), batches of states and motion checks driven over three replicas from two
// threads, one replica SIGKILLed mid-run and a fresh one started on its port (it lacks the scene). Every call
// must succeed, every answer must equal one replica's alone, and the fresh replica must have been sent the
// scene by the client. A query session whose open fails NOT_FOUND (the server lost the scene) uploads the
// scene and opens again. The same run behind nginx (deploy/nginx/proximity-grpc.conf, balancing each call)
// loses no query either. Also: targets and retry settings that cannot work are errors naming the bad part.
#include <grp.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "clients/daemon.h"
#include "core/test_util.h"
#include "proximity/clients/remote_channel.h"
#include "proximity/clients/remote_validity.h"
#include "proximity/v1/proximity.grpc.pb.h"
#include "proximity/v1/proximity.pb.h"

namespace proximity::clients {
namespace {

using test_daemon::Daemon;

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// The KR5 URDF, every mesh it names (keyed as it names them), and a wall and a ball in its reach.
std::string Kr5SceneRequest() {
  const std::filesystem::path dir = std::filesystem::path(testing::DartUrdfDir()) / "KR5";
  const std::string urdf = ReadFile(dir / "KR5 sixx R650.urdf");
  std::map<std::string, std::string> files;
  const std::regex mesh("filename=\"([^\"]+)\"");
  for (auto it = std::sregex_iterator(urdf.begin(), urdf.end(), mesh); it != std::sregex_iterator(); ++it) {
    files[(*it)[1]] = ReadFile(dir / (*it)[1].str());
  }
  v1::CreateSceneRequest request;
  EXPECT_TRUE(request.ParseFromString(RobotSceneRequest(urdf, "", files)));
  v1::CollisionObject* wall = request.add_objects();
  wall->set_id("wall");
  wall->mutable_pose()->mutable_position()->set_x(0.5);
  wall->mutable_pose()->mutable_position()->set_z(0.5);
  auto* size = wall->add_parts()->mutable_shape()->mutable_box()->mutable_size();
  size->set_x(0.05);
  size->set_y(2.0);
  size->set_z(2.0);
  v1::CollisionObject* ball = request.add_objects();
  ball->set_id("ball");
  ball->mutable_pose()->mutable_position()->set_x(0.3);
  ball->mutable_pose()->mutable_position()->set_y(0.3);
  ball->mutable_pose()->mutable_position()->set_z(0.9);
  ball->add_parts()->mutable_shape()->mutable_sphere()->set_radius(0.15);
  return request.SerializeAsString();
}

TEST(ReplicaTargets, ListsBecomeAddressTargetsAndBadOnesAreErrorsNamingThem) {
  auto list = ResolveTarget("127.0.0.1:50061,127.0.0.1:50062");
  ASSERT_TRUE(list.ok()) << list.error().message;
  EXPECT_EQ(list.value().target, "ipv4:127.0.0.1:50061,127.0.0.1:50062");
  EXPECT_TRUE(list.value().several);
  auto v6 = ResolveTarget("[::1]:5,[::1]:6");
  ASSERT_TRUE(v6.ok()) << v6.error().message;
  EXPECT_EQ(v6.value().target, "ipv6:[::1]:5,[::1]:6");
  auto dns = ResolveTarget("dns:///proximityd.default.svc.cluster.local:50051");
  ASSERT_TRUE(dns.ok());
  EXPECT_TRUE(dns.value().several);
  auto one = ResolveTarget("localhost:50051");
  ASSERT_TRUE(one.ok());
  EXPECT_FALSE(one.value().several);
  const std::pair<const char*, const char*> bad[] = {
      {"", "target is empty"},
      {"127.0.0.1", "is not host:port"},
      {"127.0.0.1:0", "no port in [1, 65535]"},
      {"127.0.0.1:5,,127.0.0.1:6", "an empty address"},
      {"localhost:5,127.0.0.1:6", "is a name, not an IP address"},
      {"127.0.0.1:5,[::1]:6", "cannot be mixed"},
      {"ipv4:[::1]:5", "are not ipv4 addresses"},
      {"dns:///proximityd", "is not host:port"},
  };
  for (const auto& [target, message] : bad) {
    auto r = ResolveTarget(target);
    ASSERT_FALSE(r.ok()) << target;
    EXPECT_NE(r.error().message.find(message), std::string::npos) << target << ": " << r.error().message;
    RemoteOptions options;
    options.target = target;
    auto c = RemoteScene::Connect(options);
    ASSERT_FALSE(c.ok()) << target;
    EXPECT_NE(c.error().message.find(message), std::string::npos) << c.error().message;
  }
}

TEST(ReplicaTargets, BadRetrySettingsAreErrorsNamingTheField) {
  struct Case {
    RetryPolicy policy;
    const char* message;
  };
  std::vector<Case> cases(5);
  cases[0].policy.max_attempts = 6;
  cases[0].message = "max_attempts must be in [2, 5]";
  cases[1].policy.initial_backoff = std::chrono::milliseconds(0);
  cases[1].message = "initial_backoff must be > 0";
  cases[2].policy.max_backoff = std::chrono::milliseconds(10);
  cases[2].message = "max_backoff (10 ms) must be >= initial_backoff (50 ms)";
  cases[3].policy.backoff_multiplier = 0.5;
  cases[3].message = "backoff_multiplier must be a finite number >= 1";
  cases[4].policy.rounds = -1;
  cases[4].message = "rounds must be >= 0";
  for (const Case& c : cases) {
    RemoteOptions options;
    options.target = "127.0.0.1:50051";
    options.retry = c.policy;
    auto r = RemoteScene::Connect(options);
    ASSERT_FALSE(r.ok()) << c.message;
    EXPECT_NE(r.error().message.find(c.message), std::string::npos) << r.error().message;
  }
  // The service config names round robin and the retry policy for every method but DeleteScene.
  const std::string config = ServiceConfigJson(true, RetryPolicy{});
  EXPECT_NE(config.find(R"("round_robin")"), std::string::npos) << config;
  EXPECT_NE(config.find(R"("retryableStatusCodes":["UNAVAILABLE"])"), std::string::npos) << config;
  EXPECT_NE(config.find(R"("method":"CheckStates")"), std::string::npos) << config;
  EXPECT_EQ(config.find("DeleteScene"), std::string::npos) << config;
  RetryPolicy off;
  off.enabled = false;
  EXPECT_EQ(ServiceConfigJson(false, off), "");
}

// The server loses the scene (another client deletes it) before the first session call: the session's open
// fails NOT_FOUND, the client uploads the scene again and opens the session again, and every answer equals
// the unary answers from before the loss.
TEST(ReplicaSessions, AnOpenThatFailsNotFoundUploadsTheSceneAndOpensAgain) {
  PROX_REQUIRE_DIR(testing::DartUrdfDir(), "Debian dart-doc's URDF folder (the KR5)");
  std::string error;
  std::unique_ptr<Daemon> daemon = Daemon::Start(&error, 0, 1);
  ASSERT_NE(daemon, nullptr) << error;
  RemoteOptions options;
  options.target = daemon->target();
  options.deadline = std::chrono::seconds(60);
  auto scene = RemoteScene::Create(options, Kr5SceneRequest());
  ASSERT_TRUE(scene.ok()) << scene.error().message;
  RemoteOptions unary = options;
  unary.use_session = false;
  unary.scene_id = scene.value()->options().scene_id;
  auto reference = RemoteScene::Connect(unary);
  ASSERT_TRUE(reference.ok()) << reference.error().message;
  auto info = reference.value()->Info();
  ASSERT_TRUE(info.ok()) << info.error().message;
  const size_t dof = info.value().joint_names.size();
  std::mt19937_64 rng(7);
  std::vector<std::vector<double>> ends(16, std::vector<double>(dof));
  for (auto& q : ends) {
    for (size_t j = 0; j < dof; ++j) {
      q[j] = std::uniform_real_distribution<double>(info.value().lower[j], info.value().upper[j])(rng);
    }
  }
  std::vector<planners::MotionCheck> expect;
  int free = 0;
  for (size_t i = 0; i + 1 < ends.size(); i += 2) {
    auto m = reference.value()->CheckMotion(ends[i], ends[i + 1], RemoteMotionRequest{});
    ASSERT_TRUE(m.ok()) << m.error().message;
    expect.push_back(m.value());
    free += m.value().valid;
  }
  EXPECT_LT(free, static_cast<int>(expect.size())) << "some motions should collide";

  auto stub = v1::ProximityService::NewStub(grpc::CreateChannel(daemon->target(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  v1::DeleteSceneRequest del;
  del.set_scene_id(unary.scene_id);
  v1::DeleteSceneResponse deleted;
  ASSERT_TRUE(stub->DeleteScene(&context, del, &deleted).ok());
  ASSERT_FALSE(reference.value()->Info().ok()) << "the scene should be gone from the server";

  const int64_t uploads = scene.value()->uploads();
  for (size_t k = 0; k < expect.size(); ++k) {
    auto m = scene.value()->CheckMotion(ends[2 * k], ends[2 * k + 1], RemoteMotionRequest{});
    ASSERT_TRUE(m.ok()) << m.error().message;
    EXPECT_EQ(m.value().valid, expect[k].valid) << k;
    EXPECT_EQ(m.value().last_valid_t, expect[k].last_valid_t) << k;
  }
  EXPECT_EQ(scene.value()->uploads(), uploads + 1);
  EXPECT_EQ(scene.value()->sessions_opened(), 2);  // the open that failed NOT_FOUND, and the one after the upload
  EXPECT_TRUE(reference.value()->Info().ok()) << "the upload should have restored the scene";
}

// nginx from deploy/nginx/proximity-grpc.conf (its listen address and upstream servers replaced) on a free
// loopback port, run unprivileged (as nobody when the test runs as root) from a temporary folder; its
// process group is stopped and the folder removed on destruction.
class Nginx {
 public:
  static std::string Binary() {
    for (const char* p : {"/usr/sbin/nginx", "/usr/bin/nginx"}) {
      if (access(p, X_OK) == 0) return p;
    }
    return "";
  }

  static std::unique_ptr<Nginx> Start(const std::vector<std::string>& servers, std::string* error) {
    auto n = std::unique_ptr<Nginx>(new Nginx());
    std::string dir = (std::filesystem::temp_directory_path() / "proximity-nginx-XXXXXX").string();
    if (mkdtemp(dir.data()) == nullptr) {
      *error = "mkdtemp failed";
      return nullptr;
    }
    n->prefix_ = dir;
    std::filesystem::create_directories(n->prefix_ / "logs");
    std::filesystem::create_directories(n->prefix_ / "tmp");
    const std::string tmpl = ReadFile(std::filesystem::path(PROX_SOURCE_DIR) / "deploy/nginx/proximity-grpc.conf");
    n->port_ = FreePort();
    std::string conf = std::regex_replace(tmpl, std::regex(R"(listen\s+[0-9.]+:\d+(\s+http2;))"),
                                          "listen " + n->target() + "$1");
    std::smatch first;
    const std::regex server_line(R"((\n[ \t]*)server\s+[0-9.]+:\d+([^;\n]*);)");
    if (conf == tmpl || !std::regex_search(conf, first, server_line)) {
      *error = "deploy/nginx/proximity-grpc.conf lacks its 'listen ADDRESS http2;' or 'server ADDRESS ...;' lines";
      return nullptr;
    }
    std::string block;
    for (const std::string& s : servers) block += first[1].str() + "server " + s + first[2].str() + ";";
    conf = std::regex_replace(conf, server_line, "");
    conf.insert(static_cast<size_t>(first.position(0)), block);
    const std::string conf_path = (n->prefix_ / "proximity-grpc.conf").string();
    std::ofstream(conf_path) << conf;
    const bool root = geteuid() == 0;
    if (root) {  // never run the proxy as root: its files go to nobody, and so does it
      for (const auto& e : std::filesystem::recursive_directory_iterator(n->prefix_)) {
        if (chown(e.path().c_str(), 65534, 65534) != 0) *error = "chown failed";
      }
      if (chown(n->prefix_.c_str(), 65534, 65534) != 0) *error = "chown failed";
    }
    const std::string binary = Binary(), prefix = n->prefix_.string(), log = (n->prefix_ / "stderr.txt").string();
    std::vector<std::string> args = {binary, "-p", prefix, "-c", conf_path, "-g", "daemon off;"};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    n->pid_ = fork();
    if (n->pid_ == 0) {  // the child: only async-signal-safe calls until exec
      setsid();
      if (root && (setgroups(0, nullptr) != 0 || setgid(65534) != 0 || setuid(65534) != 0)) _exit(126);
      const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
      }
      execv(argv[0], argv.data());
      _exit(127);
    }
    using Clock = std::chrono::steady_clock;
    for (const auto until = Clock::now() + std::chrono::seconds(30); Clock::now() < until;) {
      if (waitpid(n->pid_, nullptr, WNOHANG) == n->pid_) {
        n->pid_ = -1;
        *error = "nginx exited at start: " + ReadFile(log) + ReadFile(n->prefix_ / "logs/error.log");
        return nullptr;
      }
      const int fd = socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_port = htons(static_cast<uint16_t>(n->port_));
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      const bool up = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
      close(fd);
      if (up) return n;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    *error = "nginx did not listen within 30 s: " + ReadFile(log);
    return nullptr;
  }

  ~Nginx() {
    if (pid_ > 0) {
      kill(-pid_, SIGTERM);  // nginx's fast shutdown: the master stops its workers
      for (int i = 0; i < 100 && waitpid(pid_, nullptr, WNOHANG) == 0; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      kill(-pid_, SIGKILL);  // whatever is left of its process group
      waitpid(pid_, nullptr, 0);
    }
    std::error_code ec;
    if (!prefix_.empty()) std::filesystem::remove_all(prefix_, ec);
  }

  std::string target() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  Nginx() = default;
  static int FreePort() {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    close(fd);
    return ntohs(a.sin_port);
  }
  std::filesystem::path prefix_;
  int port_ = 0;
  pid_t pid_ = -1;
};

class ReplicaKillTest : public ::testing::Test {
 protected:
  void SetUp() override {
    PROX_REQUIRE_DIR(testing::DartUrdfDir(), "Debian dart-doc's URDF folder (the KR5)");
    for (int i = 0; i < 3; ++i) {
      std::string error;
      replicas_.push_back(Daemon::Start(&error, 0, 1));
      ASSERT_NE(replicas_.back(), nullptr) << error;
    }
  }
  // The run: batches and motion checks from two threads over the three replicas (listed in the target,
  // or behind nginx), one replica SIGKILLed mid-run and a fresh one started on its port.
  void Run(bool through_proxy);
  std::vector<std::unique_ptr<Daemon>> replicas_;
};

TEST_F(ReplicaKillTest, OneReplicaKilledMidRunAndAFreshOneLoseNoQuery) { Run(false); }

// The same behind nginx: the client knows one address; nginx balances each call (each session stream)
// over the replicas. A replica's loss reaches the client as UNAVAILABLE (nginx's 502) or as a stream
// reset by nginx, both repeated by the client.
TEST_F(ReplicaKillTest, BehindNginxOneReplicaKilledMidRunAndAFreshOneLoseNoQuery) {
  if (Nginx::Binary().empty()) GTEST_SKIP() << "nginx is not installed (scripts/setup.sh installs Debian's nginx)";
  Run(true);
}

void ReplicaKillTest::Run(bool through_proxy) {
  const std::string request = Kr5SceneRequest();
  constexpr int kChunks = 60;
  // Rows a chunk: a quarter under a sanitizer (the failover, not the volume, is what is tested there).
  const int kRows = proximity::testing::Cases(2000);
  // The reference: replica 0 alone.
  RemoteOptions single;
  single.target = replicas_[0]->target();
  single.deadline = std::chrono::seconds(120);
  auto reference = RemoteScene::Create(single, request);
  ASSERT_TRUE(reference.ok()) << reference.error().message;
  auto info = reference.value()->Info();
  ASSERT_TRUE(info.ok()) << info.error().message;
  const int dof = static_cast<int>(info.value().joint_names.size());
  std::mt19937_64 rng(23);
  std::vector<std::vector<double>> chunks(kChunks, std::vector<double>(static_cast<size_t>(kRows * dof)));
  for (auto& chunk : chunks) {
    for (size_t i = 0; i < chunk.size(); ++i) {
      const size_t j = i % static_cast<size_t>(dof);
      chunk[i] = std::uniform_real_distribution<double>(info.value().lower[j], info.value().upper[j])(rng);
    }
  }
  std::vector<std::vector<uint8_t>> expect_states;
  std::vector<planners::MotionCheck> expect_motions;
  for (const auto& chunk : chunks) {
    auto r = reference.value()->CheckStates(chunk, dof);
    ASSERT_TRUE(r.ok()) << r.error().message;
    expect_states.push_back(r.value());
    auto m = reference.value()->CheckMotion(std::span(chunk).first(static_cast<size_t>(dof)),
                                            std::span(chunk).subspan(static_cast<size_t>(dof), static_cast<size_t>(dof)),
                                            RemoteMotionRequest{});
    ASSERT_TRUE(m.ok()) << m.error().message;
    expect_motions.push_back(m.value());
  }

  // Three replicas behind one client; only replica 0 has the scene so far.
  RemoteOptions options;
  options.target = replicas_[0]->target() + "," + replicas_[1]->target() + "," + replicas_[2]->target();
  std::unique_ptr<Nginx> nginx;
  if (through_proxy) {
    std::string error;
    nginx = Nginx::Start({replicas_[0]->target(), replicas_[1]->target(), replicas_[2]->target()}, &error);
    ASSERT_NE(nginx, nullptr) << error;
    options.target = nginx->target();
  }
  options.deadline = std::chrono::seconds(120);
  options.batch_rows = 500;
  options.max_reconnect_backoff = std::chrono::seconds(1);
  auto remote = RemoteScene::Create(options, request);
  ASSERT_TRUE(remote.ok()) << remote.error().message;
  ASSERT_EQ(remote.value()->options().scene_id, reference.value()->options().scene_id);
  const RemoteScene& scene = *remote.value();

  std::vector<std::vector<uint8_t>> got_states(kChunks);
  std::vector<planners::MotionCheck> got_motions(kChunks);
  std::mutex mutex;
  std::condition_variable progressed;
  int done = 0;
  std::vector<std::string> errors;
  std::atomic<int> next{0};
  auto drive = [&] {
    for (int i; (i = next.fetch_add(1)) < kChunks;) {
      const auto& chunk = chunks[static_cast<size_t>(i)];
      auto r = scene.CheckStates(chunk, dof);
      auto m = scene.CheckMotion(std::span(chunk).first(static_cast<size_t>(dof)),
                                 std::span(chunk).subspan(static_cast<size_t>(dof), static_cast<size_t>(dof)),
                                 RemoteMotionRequest{});
      std::lock_guard lock(mutex);
      if (!r.ok()) errors.push_back("chunk " + std::to_string(i) + ": " + r.error().message);
      if (!m.ok()) errors.push_back("motion " + std::to_string(i) + ": " + m.error().message);
      if (r.ok()) got_states[static_cast<size_t>(i)] = r.value();
      if (m.ok()) got_motions[static_cast<size_t>(i)] = m.value();
      ++done;
      progressed.notify_all();
    }
  };
  std::thread a(drive), b(drive);
  int done_at_kill = 0;
  {
    std::unique_lock lock(mutex);
    ASSERT_TRUE(progressed.wait_for(lock, std::chrono::minutes(5), [&] { return done >= kChunks / 3; }));
  }
  const int victim_port = replicas_[1]->port();
  replicas_[1]->Kill();
  {
    std::unique_lock lock(mutex);
    done_at_kill = done;
    ASSERT_TRUE(progressed.wait_for(lock, std::chrono::minutes(5), [&] { return done >= 2 * kChunks / 3; }));
  }
  std::string error;
  std::unique_ptr<Daemon> fresh = Daemon::Start(&error, victim_port, 1);
  ASSERT_NE(fresh, nullptr) << error;
  a.join();
  b.join();
  EXPECT_LT(done_at_kill, kChunks) << "the run ended before the kill";
  EXPECT_TRUE(errors.empty()) << errors.size() << " failed calls, first: " << errors.front();
  for (int i = 0; i < kChunks; ++i) {
    EXPECT_EQ(got_states[static_cast<size_t>(i)], expect_states[static_cast<size_t>(i)]) << "chunk " << i;
    EXPECT_EQ(got_motions[static_cast<size_t>(i)].valid, expect_motions[static_cast<size_t>(i)].valid) << i;
    EXPECT_EQ(got_motions[static_cast<size_t>(i)].last_valid_t, expect_motions[static_cast<size_t>(i)].last_valid_t)
        << i;
  }

  // The fresh replica is reached again (round robin reconnects) and gets the scene from the client.
  RemoteOptions direct;
  direct.target = fresh->target();
  direct.scene_id = scene.options().scene_id;
  auto fresh_view = RemoteScene::Connect(direct);
  ASSERT_TRUE(fresh_view.ok());
  bool has = false;
  for (const auto until = std::chrono::steady_clock::now() + std::chrono::minutes(1);
       !has && std::chrono::steady_clock::now() < until;) {
    ASSERT_TRUE(scene.CheckStates(chunks[0], dof).ok());
    has = fresh_view.value()->Info().ok();
  }
  ASSERT_TRUE(has) << "the fresh replica never received the scene";
  auto on_fresh = fresh_view.value()->CheckStates(chunks[0], dof);
  ASSERT_TRUE(on_fresh.ok()) << on_fresh.error().message;
  EXPECT_EQ(on_fresh.value(), expect_states[0]);
  EXPECT_GE(scene.uploads(), 2);  // replica 2 and the fresh one at least
  std::printf("[ replicas ] %d batches of %d states and %d motions over 3 replicas%s, one SIGKILLed after %d and "
              "replaced: 0 failed; %lld calls repeated after UNAVAILABLE, %lld scene uploads\n",
              kChunks, kRows, kChunks, through_proxy ? " behind nginx" : "", done_at_kill,
              static_cast<long long>(scene.retries()),
              static_cast<long long>(scene.uploads()));
}

}  // namespace
}  // namespace proximity::clients
