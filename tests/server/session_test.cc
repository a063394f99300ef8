// The Session RPC (session.cc) against the core in process: answers equal the core's (and the unary calls'),
// in order with the ids echoed, warm or cold; bad queries are error answers naming the field and the session
// goes on; protocol violations, oversize batches, deadlines, a client that stops reading and the drain end
// the stream with a clear status.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/server/service_fixture.h"

namespace proximity::server::testing {
namespace {

using Stream = grpc::ClientReaderWriter<v1::SessionRequest, v1::SessionResponse>;
using Edge = std::pair<std::vector<double>, std::vector<double>>;

// A random state and the state a random fraction of the way to another: a planner's edge.
Edge RandomEdge(std::mt19937_64& rng, const core::RobotModel& robot) {
  std::vector<double> q0 = RandomState(rng, robot), q1 = RandomState(rng, robot);
  const double t = std::uniform_real_distribution<double>(0.05, 0.5)(rng);
  for (size_t i = 0; i < q1.size(); ++i) q1[i] = q0[i] + t * (q1[i] - q0[i]);
  return {q0, q1};
}

v1::SessionQuery* AddState(v1::SessionRequest* r, uint64_t id, const std::vector<double>& q) {
  v1::SessionQuery* query = r->add_queries();
  query->set_id(id);
  *query->mutable_state()->mutable_state() = Positions(q);
  return query;
}

v1::SessionQuery* AddMotion(v1::SessionRequest* r, uint64_t id, const std::vector<double>& q0,
                            const std::vector<double>& q1, v1::MotionMode mode = v1::MOTION_MODE_CERTIFIED,
                            double resolution = 0.0) {
  v1::SessionQuery* query = r->add_queries();
  query->set_id(id);
  v1::CheckMotionRequest* m = query->mutable_motion();
  *m->mutable_start() = Positions(q0);
  *m->mutable_goal() = Positions(q1);
  m->set_mode(mode);
  m->set_resolution(resolution);
  return query;
}

v1::SessionQuery* AddDistance(v1::SessionRequest* r, uint64_t id, const std::vector<double>& q) {
  v1::SessionQuery* query = r->add_queries();
  query->set_id(id);
  *query->mutable_distance()->mutable_state() = Positions(q);
  query->mutable_distance()->set_rel_err(0.05);
  return query;
}

class SessionTest : public ServiceTest {
 protected:
  std::unique_ptr<Stream> Open(grpc::ClientContext* context) { return stub_->Session(context); }

  // One round trip: writes `request`, reads its response; false when the stream ended instead.
  static bool RoundTrip(Stream* stream, const v1::SessionRequest& request, v1::SessionResponse* response) {
    return stream->Write(request) && stream->Read(response);
  }

  static v1::SessionRequest Opening(const std::string& scene_id = "default", bool cold = false) {
    v1::SessionRequest r;
    r.mutable_open()->set_scene_id(scene_id);
    r.mutable_open()->set_cold_caches(cold);
    return r;
  }
};

// Three batches of mixed queries (CLEAR, certified and discrete LINK, distance), warm and cold: every
// answer equals the core's in process, in the batch's order with its id; the opening names the scene.
TEST_F(SessionTest, AnswersEqualTheCoreInOrderWarmAndCold) {
  const bool counts = AwaitFilledMapsToCompareCounts();  // the work counts compared below
  std::mt19937_64 rng(31);
  core::SceneCache cache;
  for (const bool cold : {false, true}) {
    auto context = Context();
    auto stream = Open(context.get());
    v1::SessionRequest request = Opening("default", cold);
    int colliding_states = 0, colliding_motions = 0;
    for (int batch = 0; batch < 3; ++batch) {
      std::vector<std::vector<double>> states;
      std::vector<Edge> edges;
      uint64_t id = 1000 * static_cast<uint64_t>(batch);
      for (int k = 0; k < 12; ++k) {
        states.push_back(RandomState(rng, core_->robot()));
        AddState(&request, id + 3 * static_cast<uint64_t>(k), states.back());
        edges.push_back(RandomEdge(rng, core_->robot()));
        AddMotion(&request, id + 3 * static_cast<uint64_t>(k) + 1, edges.back().first, edges.back().second,
                  k % 3 == 2 ? v1::MOTION_MODE_DISCRETE : v1::MOTION_MODE_CERTIFIED, k % 3 == 2 ? 0.05 : 0.0);
        AddDistance(&request, id + 3 * static_cast<uint64_t>(k) + 2, states.back());
      }
      v1::SessionResponse response;
      ASSERT_TRUE(RoundTrip(stream.get(), request, &response)) << "batch " << batch;
      EXPECT_EQ(response.has_opened(), batch == 0);
      if (batch == 0) {
        EXPECT_EQ(response.opened().scene_id(), server_->default_scene_id());
        EXPECT_EQ(response.opened().dof(), static_cast<uint32_t>(core_->dof()));
        EXPECT_EQ(response.opened().max_batch(), 4096u);
      }
      ASSERT_EQ(response.answers_size(), request.queries_size());
      for (int k = 0; k < 12; ++k) {
        const std::string where = "batch " + std::to_string(batch) + " query " + std::to_string(k);
        const v1::SessionAnswer& s = response.answers(3 * k);
        const v1::SessionAnswer& m = response.answers(3 * k + 1);
        const v1::SessionAnswer& d = response.answers(3 * k + 2);
        EXPECT_EQ(s.id(), request.queries(3 * k).id()) << where;
        EXPECT_EQ(m.id(), request.queries(3 * k + 1).id()) << where;
        EXPECT_EQ(d.id(), request.queries(3 * k + 2).id()) << where;
        ASSERT_TRUE(s.has_state() && m.has_motion() && d.has_distance()) << where;
        const auto& q = states[static_cast<size_t>(k)];
        const core::StateResult cs = proximity::testing::ValueOrFail(core_->CheckState(q, &cache));
        EXPECT_EQ(s.state().free(), cs.free) << where;
        EXPECT_EQ(s.state().within_limits(), cs.within_limits) << where;
        if (!cs.free) ExpectSamePair(*core_, cs.contact, s.state().contact(), where);
        colliding_states += !cs.free;
        core::MotionRequest mr;
        if (k % 3 == 2) {
          mr.mode = core::MotionRequest::Mode::kDiscrete;
          mr.resolution = 0.05;
        }
        const auto& [q0, q1] = edges[static_cast<size_t>(k)];
        const core::MotionResult cm = proximity::testing::ValueOrFail(core_->CheckMotion(q0, q1, mr, &cache));
        ExpectSameMotion(*core_, cm, m.motion().result(), where);
        if (counts) {
          EXPECT_EQ(m.motion().stats().states(), cm.states) << where;
        }
        colliding_motions += !cm.free;
        core::SceneDistanceRequest dr;
        dr.rel_err = 0.05;
        const core::SceneDistanceResult cd = proximity::testing::ValueOrFail(core_->ComputeDistance(q, dr, &cache));
        EXPECT_EQ(d.distance().lower_bound(), cd.lower_bound) << where;
        EXPECT_EQ(d.distance().upper_bound(), cd.upper_bound) << where;
      }
      request.Clear();
    }
    EXPECT_GT(colliding_states, 0);
    EXPECT_GT(colliding_motions, 0);
    EXPECT_TRUE(stream->WritesDone());
    const grpc::Status s = stream->Finish();
    EXPECT_TRUE(s.ok()) << s.error_message();
  }
  EXPECT_EQ(server_->metrics().HandledCount(Rpc::kSession, grpc::StatusCode::OK), 2u);
  const std::string text = server_->metrics().RenderText();
  EXPECT_NE(text.find("grpc_method=\"Session\",grpc_type=\"bidi_stream\""), std::string::npos);
}

// The answers equal the unary calls' for the same requests (the session is the unary call without its
// per-call setup).
TEST_F(SessionTest, AnswersEqualTheUnaryCalls) {
  const bool counts = AwaitFilledMapsToCompareCounts();  // the work counts compared below
  std::mt19937_64 rng(5);
  auto context = Context();
  auto stream = Open(context.get());
  v1::SessionRequest request = Opening();
  std::vector<v1::CheckMotionRequest> unary;
  for (int k = 0; k < 20; ++k) {
    auto [q0, q1] = RandomEdge(rng, core_->robot());
    AddMotion(&request, static_cast<uint64_t>(k), q0, q1);
    unary.push_back(request.queries(k).motion());
    unary.back().set_scene_id("default");
  }
  v1::SessionResponse response;
  ASSERT_TRUE(RoundTrip(stream.get(), request, &response));
  ASSERT_EQ(response.answers_size(), 20);
  for (int k = 0; k < 20; ++k) {
    v1::CheckMotionResponse expected;
    ASSERT_TRUE(stub_->CheckMotion(Context().get(), unary[static_cast<size_t>(k)], &expected).ok());
    // The answer exactly; the work counters differ where the session's warm caches saved work.
    EXPECT_EQ(response.answers(k).motion().result().SerializeAsString(), expected.result().SerializeAsString())
        << "query " << k;
    if (counts) {
      EXPECT_EQ(response.answers(k).motion().stats().states(), expected.stats().states()) << "query " << k;
    }
  }
}

// Bad queries get error answers naming the field (INVALID_ARGUMENT, the unary call's status), and the
// session goes on: the next query in the batch and the next batch are answered.
TEST_F(SessionTest, BadQueriesAreErrorAnswersAndTheSessionGoesOn) {
  const int dof = core_->dof();
  const std::vector<double> home(static_cast<size_t>(dof), 0.0), short_q(static_cast<size_t>(dof - 1), 0.0);
  std::vector<double> nan_q = home;
  nan_q[1] = std::nan("");
  auto context = Context();
  auto stream = Open(context.get());
  v1::SessionRequest request = Opening();
  AddState(&request, 1, short_q);
  AddMotion(&request, 2, home, nan_q);
  AddMotion(&request, 3, home, home, v1::MOTION_MODE_DISCRETE, -1.0);
  AddState(&request, 4, home)->mutable_state()->set_scene_id("another-scene");
  v1::SessionQuery* named = AddDistance(&request, 5, home);
  named->mutable_distance()->mutable_state()->add_joint_names("no_such_joint");
  request.add_queries()->set_id(6);  // no query kind
  AddMotion(&request, 7, home, home, static_cast<v1::MotionMode>(99));
  AddState(&request, 8, home);
  v1::SessionResponse response;
  ASSERT_TRUE(RoundTrip(stream.get(), request, &response));
  ASSERT_EQ(response.answers_size(), 8);
  const std::vector<std::string> fields = {"queries[0].state.state",   "queries[1].motion.goal",
                                           "queries[2].motion.resolution", "queries[3].state.scene_id",
                                           "queries[4].distance.state", "queries[5].query",
                                           "queries[6].motion.mode"};
  for (int k = 0; k < 7; ++k) {
    const v1::SessionAnswer& a = response.answers(k);
    EXPECT_EQ(a.id(), static_cast<uint64_t>(k + 1));
    ASSERT_TRUE(a.has_error()) << "query " << k;
    EXPECT_EQ(a.error().code(), static_cast<int32_t>(grpc::StatusCode::INVALID_ARGUMENT)) << a.error().message();
    EXPECT_NE(a.error().message().find(fields[static_cast<size_t>(k)]), std::string::npos) << a.error().message();
  }
  EXPECT_NE(response.answers(0).error().message().find("expected " + std::to_string(dof)), std::string::npos)
      << response.answers(0).error().message();
  EXPECT_NE(response.answers(1).error().message().find("not finite"), std::string::npos)
      << response.answers(1).error().message();
  ASSERT_TRUE(response.answers(7).has_state());
  EXPECT_TRUE(response.answers(7).state().free()) << "the default scene's home state is free";

  request.Clear();
  AddState(&request, 9, home);
  ASSERT_TRUE(RoundTrip(stream.get(), request, &response));
  ASSERT_EQ(response.answers_size(), 1);
  EXPECT_TRUE(response.answers(0).state().free());
  EXPECT_FALSE(response.has_opened());
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

// A run of consecutive state queries (checked at once, Scene::CheckStates) answers as lone queries do:
// 300 random states with bad ones among them (too short, not finite, another scene: error answers naming
// their place) and a distance query splitting the run, each answer equal to the core's; then the run
// again with a value beyond the core's range in one state, whose query alone gets the core's error.
TEST_F(SessionTest, RunsOfStateQueriesAnswerAsLoneQueries) {
  std::mt19937_64 rng(41);
  core::SceneCache cache;
  auto context = Context();
  auto stream = Open(context.get());
  const int n = 300;
  const std::vector<std::vector<double>> states = RandomStates(rng, core_->robot(), n);
  for (const bool beyond : {false, true}) {
    SCOPED_TRACE(beyond ? "a value beyond the core's range" : "bad queries in the run");
    v1::SessionRequest request = beyond ? v1::SessionRequest() : Opening();
    for (int k = 0; k < n; ++k) AddState(&request, 700 + static_cast<uint64_t>(k), states[static_cast<size_t>(k)]);
    std::vector<std::pair<int, std::string>> errors;  // (query, the start of its error message)
    if (beyond) {
      request.mutable_queries(201)->mutable_state()->mutable_state()->set_positions(0, 1e300);
      errors = {{201, "queries[201].state: q[0] "}};
    } else {
      request.mutable_queries(10)->mutable_state()->mutable_state()->mutable_positions()->RemoveLast();
      request.mutable_queries(11)->mutable_state()->mutable_state()->set_positions(1, std::nan(""));
      request.mutable_queries(12)->mutable_state()->set_scene_id("another-scene");
      errors = {{10, "queries[10].state.state"}, {11, "queries[11].state.state"}, {12, "queries[12].state.scene_id"}};
      v1::ComputeDistanceRequest* distance = request.mutable_queries(150)->mutable_distance();
      *distance->mutable_state() = Positions(states[150]);
      distance->set_rel_err(0.05);
    }
    v1::SessionResponse response;
    ASSERT_TRUE(RoundTrip(stream.get(), request, &response));
    ASSERT_EQ(response.answers_size(), n);
    int colliding = 0;
    size_t next_error = 0;
    for (int k = 0; k < n; ++k) {
      const std::string where = "query " + std::to_string(k);
      const v1::SessionAnswer& a = response.answers(k);
      EXPECT_EQ(a.id(), 700 + static_cast<uint64_t>(k)) << where;
      if (next_error < errors.size() && errors[next_error].first == k) {
        ASSERT_TRUE(a.has_error()) << where;
        EXPECT_EQ(a.error().code(), static_cast<int32_t>(grpc::StatusCode::INVALID_ARGUMENT)) << a.error().message();
        EXPECT_EQ(a.error().message().rfind(errors[next_error].second, 0), 0u) << a.error().message();
        if (beyond) {
          EXPECT_NE(a.error().message().find("beyond"), std::string::npos) << a.error().message();
        }
        ++next_error;
        continue;
      }
      if (!beyond && k == 150) {
        ASSERT_TRUE(a.has_distance()) << where;
        continue;
      }
      ASSERT_TRUE(a.has_state()) << where << (a.has_error() ? ": " + a.error().message() : "");
      const core::StateResult cs =
          proximity::testing::ValueOrFail(core_->CheckState(states[static_cast<size_t>(k)], &cache));
      EXPECT_EQ(a.state().free(), cs.free) << where;
      EXPECT_EQ(a.state().within_limits(), cs.within_limits) << where;
      if (!cs.free) ExpectSamePair(*core_, cs.contact, a.state().contact(), where);
      EXPECT_EQ(a.state().stats().states(), 1) << where;
      colliding += !cs.free;
    }
    EXPECT_EQ(next_error, errors.size());
    EXPECT_GT(colliding, n / 10);
    EXPECT_LT(colliding, n * 9 / 10);
  }
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

// until_invalid: the answers are the prefix up to the first edge that is not free, as a lazy planner
// wants them; without it every edge is answered.
TEST_F(SessionTest, UntilInvalidAnswersThePrefixUpToTheFirstInvalid) {
  std::mt19937_64 rng(8);
  core::SceneCache cache;
  std::vector<Edge> edges;
  int first_invalid = -1;
  for (int k = 0; k < 400 && (first_invalid < 0 || static_cast<int>(edges.size()) < first_invalid + 4); ++k) {
    auto [q0, q1] = RandomEdge(rng, core_->robot());
    const core::MotionResult m = proximity::testing::ValueOrFail(core_->CheckMotion(q0, q1, {}, &cache));
    // Free edges first, then a colliding one, then a few more.
    if (first_invalid < 0 && edges.size() < 5 && !m.free) continue;
    if (first_invalid < 0 && !m.free) first_invalid = static_cast<int>(edges.size());
    edges.emplace_back(q0, q1);
  }
  ASSERT_GE(first_invalid, 5);
  auto context = Context();
  auto stream = Open(context.get());
  v1::SessionRequest request = Opening();
  request.set_until_invalid(true);
  for (size_t k = 0; k < edges.size(); ++k) AddMotion(&request, k, edges[k].first, edges[k].second);
  v1::SessionResponse response;
  ASSERT_TRUE(RoundTrip(stream.get(), request, &response));
  ASSERT_EQ(response.answers_size(), first_invalid + 1);
  for (int k = 0; k < first_invalid; ++k) EXPECT_TRUE(response.answers(k).motion().result().free()) << k;
  EXPECT_FALSE(response.answers(first_invalid).motion().result().free());
  request.clear_open();
  request.set_until_invalid(false);
  ASSERT_TRUE(RoundTrip(stream.get(), request, &response));
  EXPECT_EQ(response.answers_size(), static_cast<int>(edges.size()));
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

// Chains (a planner's batch of tree extensions): each chain of state and discrete-motion queries is
// answered in order up to its own first query that is not valid (or fails), the other chains going on;
// every answer equals the core's for its query. With `after`, a chain whose prerequisite did not end
// complete gets no answers, and the others are answered as without it.
TEST_F(SessionTest, ChainsStopEachAtItsOwnFirstInvalidQuery) {
  std::mt19937_64 rng(12);
  core::SceneCache cache;
  core::MotionRequest discrete;
  discrete.mode = core::MotionRequest::Mode::kDiscrete;
  discrete.resolution = 0.05;
  v1::SessionRequest request = Opening();
  request.set_until_invalid(true);
  // Per query: whether the core calls it valid; -1 for the one malformed query.
  std::vector<int> valid;
  std::vector<int> lengths;
  const int chains = 60;
  for (int c = 0; c < chains; ++c) {
    const int steps = 1 + static_cast<int>(rng() % 4);
    std::vector<double> from = RandomState(rng, core_->robot());
    for (int k = 0; k < steps; ++k) {
      std::vector<double> to = RandomState(rng, core_->robot());
      const double t = std::uniform_real_distribution<double>(0.02, 0.3)(rng);
      for (size_t i = 0; i < to.size(); ++i) to[i] = from[i] + t * (to[i] - from[i]);
      const auto id = static_cast<uint64_t>(request.queries_size());
      AddState(&request, id, to);
      const core::StateResult st = proximity::testing::ValueOrFail(core_->CheckState(to, &cache));
      valid.push_back(st.free && st.within_limits ? 1 : 0);
      AddMotion(&request, id + 1, from, to, v1::MOTION_MODE_DISCRETE, discrete.resolution);
      const core::MotionResult m = proximity::testing::ValueOrFail(core_->CheckMotion(from, to, discrete, &cache));
      valid.push_back(m.free ? 1 : 0);
      from = to;
    }
    lengths.push_back(2 * steps);
    request.add_chains(static_cast<uint32_t>(2 * steps));
  }
  // Every chain's states CLEARed at once (as the server does when all resolve), then again with one
  // malformed state in chain 3: an error answer that ends that chain only.
  auto context = Context();
  auto stream = Open(context.get());
  int malformed = 0;
  for (int c = 0; c < 3; ++c) malformed += lengths[static_cast<size_t>(c)];
  // Per chain in the third pass: the chain it comes after, counted from 1 (0: none).
  std::vector<uint32_t> after(lengths.size(), 0);
  for (size_t c = 1; c < after.size(); ++c) after[c] = rng() % 3 == 0 ? 0 : 1 + static_cast<uint32_t>(rng() % c);
  for (const int pass : {0, 1, 2}) {
    const bool with_malformed = pass >= 1, ordered = pass == 2;
    SCOPED_TRACE(ordered ? "chains after others" : with_malformed ? "a malformed state in chain 3" : "well formed");
    if (pass == 1) {
      request.clear_open();
      request.mutable_queries(malformed)->mutable_state()->mutable_state()->mutable_positions()->RemoveLast();
      valid[static_cast<size_t>(malformed)] = -1;
    }
    if (ordered) {
      for (const uint32_t c : after) request.add_after(c);
    }
    // The expected answers: each chain's prefix up to its first query that is not valid; none for a
    // chain whose prerequisite stopped short (or was skipped).
    std::vector<int> expected;
    std::vector<char> ended_complete(lengths.size(), 0);
    int first = 0, stopped = 0, complete = 0, skipped = 0;
    for (size_t c = 0; c < lengths.size(); ++c) {
      const int length = lengths[c];
      if (ordered && after[c] > 0 && ended_complete[after[c] - 1] == 0) {
        ++skipped;
        first += length;
        continue;
      }
      int k = first;
      for (; k < first + length; ++k) {
        expected.push_back(k);
        if (valid[static_cast<size_t>(k)] != 1) break;
      }
      (k < first + length ? stopped : complete) += 1;
      ended_complete[c] = k == first + length ? 1 : 0;
      first += length;
    }
    ASSERT_GT(stopped, 5);
    ASSERT_GT(complete, 5);
    if (ordered) {
      ASSERT_GT(skipped, 5);
    }
    v1::SessionResponse response;
    ASSERT_TRUE(RoundTrip(stream.get(), request, &response));
    ASSERT_EQ(response.answers_size(), static_cast<int>(expected.size()));
    for (size_t a = 0; a < expected.size(); ++a) {
      const int k = expected[a];
      const v1::SessionAnswer& answer = response.answers(static_cast<int>(a));
      const std::string where = "answer " + std::to_string(a) + " (query " + std::to_string(k) + ")";
      EXPECT_EQ(answer.id(), static_cast<uint64_t>(k)) << where;
      if (valid[static_cast<size_t>(k)] < 0) {
        ASSERT_TRUE(answer.has_error()) << where;
        EXPECT_EQ(answer.error().message().rfind("queries[" + std::to_string(k) + "].state.state", 0), 0u)
            << answer.error().message();
      } else if (k % 2 == 0) {
        ASSERT_TRUE(answer.has_state()) << where;
        EXPECT_EQ(answer.state().free() && answer.state().within_limits(), valid[static_cast<size_t>(k)] == 1)
            << where;
        EXPECT_EQ(answer.state().stats().states(), 1) << where;
      } else {
        ASSERT_TRUE(answer.has_motion()) << where;
        EXPECT_EQ(answer.motion().result().free(), valid[static_cast<size_t>(k)] == 1) << where;
      }
    }
  }
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

// Protocol violations end the stream with a status that says what was wrong.
TEST_F(SessionTest, ProtocolViolationsEndTheStream) {
  const std::vector<double> home(static_cast<size_t>(core_->dof()), 0.0);
  struct Case {
    const char* name;
    std::vector<v1::SessionRequest> requests;
    grpc::StatusCode code;
    std::string text;
  };
  v1::SessionRequest no_open;
  AddState(&no_open, 1, home);
  v1::SessionRequest twice = Opening();
  v1::SessionRequest oversize = Opening();
  for (int k = 0; k < 4097; ++k) AddState(&oversize, static_cast<uint64_t>(k), home);
  // Chains that do not describe the batch.
  v1::SessionRequest short_chains = Opening(), empty_chain = Opening(), loose_chains = Opening();
  for (v1::SessionRequest* r : {&short_chains, &empty_chain, &loose_chains}) {
    for (int k = 0; k < 4; ++k) AddState(r, static_cast<uint64_t>(k), home);
    r->set_until_invalid(r != &loose_chains);
  }
  for (uint32_t length : {2u, 1u}) short_chains.add_chains(length);
  for (uint32_t length : {2u, 0u, 2u}) empty_chain.add_chains(length);
  for (uint32_t length : {2u, 2u}) loose_chains.add_chains(length);
  // Prerequisites (after) that do not order the chains.
  v1::SessionRequest loose_after = Opening(), short_after = Opening(), later_after = Opening();
  for (v1::SessionRequest* r : {&loose_after, &short_after, &later_after}) {
    for (int k = 0; k < 4; ++k) AddState(r, static_cast<uint64_t>(k), home);
    r->set_until_invalid(true);
    if (r != &loose_after) {
      for (uint32_t length : {2u, 2u}) r->add_chains(length);
    }
  }
  loose_after.add_after(0);
  short_after.add_after(0);
  for (uint32_t c : {0u, 2u}) later_after.add_after(c);
  const std::vector<Case> cases = {
      {"no open", {no_open}, grpc::StatusCode::INVALID_ARGUMENT, "must carry open"},
      {"unknown scene", {Opening("no-such-scene")}, grpc::StatusCode::NOT_FOUND, "no-such-scene"},
      {"empty scene id", {Opening("")}, grpc::StatusCode::INVALID_ARGUMENT, "open.scene_id"},
      {"open twice", {Opening(), twice}, grpc::StatusCode::INVALID_ARGUMENT, "opens once"},
      {"oversize batch", {oversize}, grpc::StatusCode::RESOURCE_EXHAUSTED, "--max-session-batch = 4096"},
      {"chains short of the batch", {short_chains}, grpc::StatusCode::INVALID_ARGUMENT, "summing to 3 for a batch of 4"},
      {"an empty chain", {empty_chain}, grpc::StatusCode::INVALID_ARGUMENT, "chains[1]: 0"},
      {"chains without until_invalid", {loose_chains}, grpc::StatusCode::INVALID_ARGUMENT, "without until_invalid"},
      {"after without chains", {loose_after}, grpc::StatusCode::INVALID_ARGUMENT, "after: given without chains"},
      {"after short of the chains", {short_after}, grpc::StatusCode::INVALID_ARGUMENT, "after: 1 entries for 2"},
      {"after a later chain", {later_after}, grpc::StatusCode::INVALID_ARGUMENT, "after[1]: 2"},
  };
  for (const Case& c : cases) {
    auto context = Context();
    auto stream = Open(context.get());
    v1::SessionResponse response;
    int answered = 0;
    for (const v1::SessionRequest& r : c.requests) {
      if (!stream->Write(r) || !stream->Read(&response)) break;
      ++answered;
    }
    EXPECT_EQ(answered, static_cast<int>(c.requests.size()) - 1) << c.name;
    stream->WritesDone();
    const grpc::Status s = stream->Finish();
    EXPECT_EQ(s.error_code(), c.code) << c.name << ": " << s.error_message();
    EXPECT_NE(s.error_message().find(c.text), std::string::npos) << c.name << ": " << s.error_message();
  }
  // The server keeps serving.
  auto context = Context();
  auto stream = Open(context.get());
  v1::SessionRequest request = Opening();
  AddState(&request, 1, home);
  v1::SessionResponse response;
  ASSERT_TRUE(RoundTrip(stream.get(), request, &response));
  EXPECT_TRUE(response.answers(0).state().free());
}

// An idle session ends at its deadline; a client that keeps sending but never reads holds the server
// to one batch of answers (the handler blocks in Write, reads no more) and the stream still ends at the
// deadline, after which the server answers other calls.
TEST_F(SessionTest, DeadlinesEndIdleAndUnreadSessions) {
  const std::vector<double> home(static_cast<size_t>(core_->dof()), 0.0);
  {
    auto context = Context(std::chrono::milliseconds(300));
    auto stream = Open(context.get());
    v1::SessionRequest request = Opening();
    AddState(&request, 1, home);
    v1::SessionResponse response;
    ASSERT_TRUE(RoundTrip(stream.get(), request, &response));
    EXPECT_FALSE(stream->Read(&response)) << "nothing more to read; the deadline ends the stream";
    // Both ends time the deadline. On a loaded machine the server's expiry can reach the client as a
    // reset stream (CANCELLED) before the client's own timer fires (DEADLINE_EXCEEDED); either way the
    // stream ended by the deadline, not by the server answering.
    const grpc::Status s = stream->Finish();
    EXPECT_TRUE(s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED ||
                s.error_code() == grpc::StatusCode::CANCELLED)
        << s.error_code() << ": " << s.error_message();
    EXPECT_TRUE(Eventually([&] {
      return server_->metrics().HandledCount(Rpc::kSession, grpc::StatusCode::DEADLINE_EXCEEDED) == 1;
    })) << "the server ends the idle session as its deadline's";
  }
  {
    auto context = Context(std::chrono::seconds(2));
    auto stream = Open(context.get());
    v1::SessionRequest request = Opening();
    for (int k = 0; k < 4000; ++k) AddDistance(&request, static_cast<uint64_t>(k), home)
        ->mutable_distance()->set_per_pair(true);
    int written = 0;
    // The writes block once the server stops reading (flow control) and fail at the deadline.
    while (written < 100'000 && stream->Write(request)) {
      ++written;
      request.clear_open();
    }
    EXPECT_LT(written, 100'000) << "the server must stop reading while its answers are not read";
    const grpc::Status s = stream->Finish();
    EXPECT_TRUE(s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED ||
                s.error_code() == grpc::StatusCode::CANCELLED)
        << s.error_message();
    std::printf("[ unread ] a client that never reads: %d batches of 4,000 queries written before the "
                "stream ended with %d\n", written, static_cast<int>(s.error_code()));
  }
  v1::CheckStateRequest unary;
  unary.set_scene_id("default");
  *unary.mutable_state() = Positions(home);
  v1::CheckStateResponse answer;
  EXPECT_TRUE(stub_->CheckState(Context().get(), unary, &answer).ok());
  EXPECT_TRUE(Eventually([&] {
    return server_->metrics().HandledCount(Rpc::kSession, grpc::StatusCode::DEADLINE_EXCEEDED) +
               server_->metrics().HandledCount(Rpc::kSession, grpc::StatusCode::CANCELLED) ==
           2;
  }));
}

// The server's --max-call-seconds ends a session whatever its client's deadline, and --max-session-batch
// is the server's to set.
TEST_F(SessionTest, TheServersCallTimeAndBatchLimitsHold) {
  ServerOptions options = TestOptions();
  options.limits.max_call_seconds = 0.5;
  options.limits.max_session_batch = 8;
  auto started = ProximityServer::Start(options);
  ASSERT_TRUE(started.ok()) << started.error().message;
  auto stub = v1::ProximityService::NewStub(grpc::CreateChannel(
      "127.0.0.1:" + std::to_string(started.value()->port()), grpc::InsecureChannelCredentials()));
  const std::vector<double> home(static_cast<size_t>(core_->dof()), 0.0);
  {
    auto context = Context();  // two minutes: the server's half second ends it first
    auto stream = stub->Session(context.get());
    v1::SessionRequest request = Opening();
    AddState(&request, 1, home);
    v1::SessionResponse response;
    ASSERT_TRUE(RoundTrip(stream.get(), request, &response));
    EXPECT_EQ(response.opened().max_batch(), 8u);
    EXPECT_FALSE(stream->Read(&response)) << "the stream must end at the server's --max-call-seconds";
    const grpc::Status s = stream->Finish();
    EXPECT_TRUE(s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED || s.error_code() == grpc::StatusCode::CANCELLED)
        << s.error_message();
  }
  {
    auto context = Context();
    auto stream = stub->Session(context.get());
    v1::SessionRequest request = Opening();
    for (int k = 0; k < 9; ++k) AddState(&request, static_cast<uint64_t>(k), home);
    v1::SessionResponse response;
    EXPECT_FALSE(RoundTrip(stream.get(), request, &response));
    const grpc::Status s = stream->Finish();
    EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
    EXPECT_NE(s.error_message().find("--max-session-batch = 8"), std::string::npos) << s.error_message();
  }
  EXPECT_EQ(started.value()->metrics().HandledCount(Rpc::kSession, grpc::StatusCode::OK), 0u);
}

// The drain ends an idle session (the client sees the stream cancelled) instead of waiting for it.
TEST_F(SessionTest, TheDrainEndsIdleSessions) {
  const std::vector<double> home(static_cast<size_t>(core_->dof()), 0.0);
  auto context = Context();
  auto stream = Open(context.get());
  v1::SessionRequest request = Opening();
  AddState(&request, 1, home);
  v1::SessionResponse response;
  ASSERT_TRUE(RoundTrip(stream.get(), request, &response));
  // A drain of ten minutes: were the session to hold it, the test would not end.
  std::thread drain([&] { server_->Shutdown(std::chrono::minutes(10)); });
  EXPECT_FALSE(stream->Read(&response));
  const grpc::Status s = stream->Finish();
  drain.join();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::CANCELLED) << s.error_message();
  EXPECT_EQ(server_->metrics().HandledCount(Rpc::kSession, grpc::StatusCode::CANCELLED), 1u);
}

}  // namespace
}  // namespace proximity::server::testing
