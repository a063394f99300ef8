// The Session RPC: one opening (token, --max-concurrent-calls, scene lookup) per stream, then batches
// of CLEAR, LINK, distance and track queries answered in order on the handler's thread (consecutive
// CLEARs by one Scene::CheckStates call). The session owns its scratch (configurations, the SceneCache
// with its link poses and GJK warm starts), its clearance tracker (made at the first track query, on the
// scene version's shared TrackingGeometry) and its request and response messages, reused from batch to
// batch: a warm query allocates only what its answer needs.
//
// What is an error answer and what ends the stream is the contract's (SessionRequest in
// proximity.proto): a query the server cannot answer gets an error answer for its id; a protocol
// violation, an oversize batch or response, the deadline, a cancellation or the drain end the stream.
// Flow control: one batch is read, answered and written before the next is read, so a client that
// stops reading holds at most one batch of answers here; the call's watchdog cancels the stream just
// after its deadline (or --max-call-seconds) even while a Read or Write is blocked.

#include <algorithm>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "server/queries.h"
#include "server/service.h"

namespace proximity::server {

namespace {

constexpr std::string_view kSessionBatchOption = "--max-session-batch";

// A query's error answer: the status the unary call would have ended with.
void ErrorAnswer(const core::Error& error, v1::SessionAnswer* answer) {
  const grpc::Status s = ToGrpcStatus(error);
  v1::QueryError* out = answer->mutable_error();
  out->set_code(static_cast<int32_t>(s.error_code()));
  out->set_message(s.error_message());
}

// A batch's chains: none, or lengths >= 1 that sum to its number of queries (and only with
// until_invalid, where they mean something); its `after`: none, or one entry per chain, each 0 or an
// earlier chain counted from 1.
core::Status CheckChains(const v1::SessionRequest& request) {
  if (request.chains_size() == 0) {
    if (request.after_size() > 0) return core::InvalidArgument("after: given without chains (it orders chains)");
    return {};
  }
  if (!request.until_invalid()) {
    return core::InvalidArgument("chains: given without until_invalid (chains stop at their first invalid query)");
  }
  int64_t sum = 0;
  for (int c = 0; c < request.chains_size(); ++c) {
    if (request.chains(c) == 0) {
      return core::InvalidArgument("chains[" + std::to_string(c) + "]: 0; a chain holds >= 1 query");
    }
    sum += request.chains(c);
  }
  if (sum != request.queries_size()) {
    return core::InvalidArgument("chains: lengths summing to " + std::to_string(sum) + " for a batch of " +
                                 std::to_string(request.queries_size()) + " queries");
  }
  if (request.after_size() == 0) return {};
  if (request.after_size() != request.chains_size()) {
    return core::InvalidArgument("after: " + std::to_string(request.after_size()) + " entries for " +
                                 std::to_string(request.chains_size()) + " chains (one per chain, 0 for none)");
  }
  for (int c = 0; c < request.after_size(); ++c) {
    if (request.after(c) > static_cast<uint32_t>(c)) {
      return core::InvalidArgument("after[" + std::to_string(c) + "]: " + std::to_string(request.after(c)) +
                                   "; a chain comes after an earlier chain (counted from 1), or 0");
    }
  }
  return {};
}

// One open session: its scene, scratch and tallies.
class SessionState {
 public:
  SessionState(CallScope* call, bool cold, SceneRegistry* registry, int64_t max_tracker_bytes)
      : call_(call), registry_(registry), scene_(call->scene()), cold_(cold), max_tracker_bytes_(max_tracker_bytes) {
    const auto dof = static_cast<size_t>(scene_.dof());
    q0_.reserve(dof);
    scratch_.q0.reserve(dof);
    scratch_.q1.reserve(dof);
  }

  // Answers `request`'s queries into `response` (cleared first). OK, or the status that ends the stream
  // (a query stopped by the deadline or a cancellation).
  grpc::Status Answer(const v1::SessionRequest& request, v1::SessionResponse* response) {
    response->clear_answers();
    const int n = request.queries_size();
    if (request.until_invalid()) {
      // Chains (their lengths and order checked by the caller; the whole batch when none are given),
      // each stopped after its first invalid query, and skipped when the chain it comes after did not
      // end complete. They go in runs: from the first chain not answered yet, those whose prerequisites
      // come before it. A run's states are CLEARed at once first (one Scene::CheckStates call; a CLEAR's
      // answer does not depend on when it is asked; a skipped chain's are left out) and answered from
      // that where a chain gets to them.
      const uint32_t whole[1] = {static_cast<uint32_t>(n)};
      const std::span<const uint32_t> chains =
          request.chains_size() > 0 ? std::span<const uint32_t>(request.chains().data(), request.chains().size())
                                    : std::span<const uint32_t>(whole);
      // after(c): the chain c comes after, counted from 1 (0: none).
      auto after = [&](size_t c) { return request.after_size() > 0 ? request.after(static_cast<int>(c)) : 0u; };
      chain_begin_.assign(1, 0);
      for (const uint32_t length : chains) chain_begin_.push_back(chain_begin_.back() + static_cast<int>(length));
      complete_.assign(chains.size(), 0);
      for (size_t run = 0; run < chains.size();) {
        size_t end = run + 1;
        while (end < chains.size() && after(end) <= run) ++end;
        live_.clear();
        ranges_.clear();
        for (size_t c = run; c < end; ++c) {
          if (after(c) != 0 && complete_[after(c) - 1] == 0) continue;
          live_.push_back(c);
          ranges_.emplace_back(chain_begin_[c], chain_begin_[c + 1]);
        }
        const bool batched = !cold_ && CheckStateQueries(request, ranges_);
        for (const size_t c : live_) {
          bool valid = true;
          for (int i = chain_begin_[c]; i < chain_begin_[c + 1] && valid; ++i) {
            if (grpc::Status s = AnswerQuery(request, i, batched, response, &valid); !s.ok()) return s;
          }
          complete_[c] = valid ? 1 : 0;
        }
        run = end;
      }
      return grpc::Status::OK;
    }
    for (int i = 0; i < n; ++i) {
      // A run of CLEARs is checked at once (Scene::CheckStates); cold caches start every query afresh, so
      // those go one at a time.
      if (!cold_) {
        int end = i;
        while (end < n && request.queries(end).query_case() == v1::SessionQuery::kState) ++end;
        if (end - i >= 2) {
          AnswerStates(request, i, end, response);
          queries_ += end - i;
          i = end - 1;
          continue;
        }
      }
      bool valid = true;
      if (grpc::Status s = AnswerQuery(request, i, false, response, &valid); !s.ok()) return s;
    }
    return grpc::Status::OK;
  }

  // Counts the session's queries and work in the metrics and its log line.
  void Record() {
    CallRecorder& rec = call_->record();
    rec.Count(QueryKind::kClear, clear_, clear_work_);
    rec.Count(QueryKind::kLink, link_, link_work_);
    rec.Count(QueryKind::kDistance, distance_, distance_work_);
    rec.Count(QueryKind::kTrack, track_, track_work_);
    rec.set_states(clear_work_.states + link_work_.states + distance_work_.states + track_work_.states);
    rec.set_field("batches", batches_);
    rec.set_field("queries", queries_);
    rec.set_field("query_errors", errors_);
    if (track_ > 0) {
      rec.set_field("track_queries", track_);
      // What the tracker held (its warm starts and buffers; the shared polyhedra count with the scene).
      rec.set_field("tracker_bytes", tracker_bytes_);
      if (tracker_resets_ > 0) rec.set_field("tracker_resets", tracker_resets_);
    }
  }

  int64_t queries() const { return queries_; }
  void AddBatch() { ++batches_; }
  int64_t batches() const { return batches_; }

 private:
  core::SceneCache* Cache() {
    if (!cold_) return &cache_;
    cold_cache_ = core::SceneCache();
    return &cold_cache_;
  }
  // The scratch of a motion or distance query (queries.h): buffers kept across the session, its cache.
  QueryScratch* Scratch() {
    scratch_.cache = Cache();
    return &scratch_;
  }

  // The session's tracker, made at its first track query on the scene version's shared polyhedra (built
  // by the first session that tracks on this version). Cold caches: a new tracker for every query.
  core::Tracker* Tracker() {
    if (tracker_ != nullptr && !cold_) return tracker_.get();
    bool built = false;
    std::shared_ptr<const core::TrackingGeometry> geometry = TrackingGeometryOf(call_->entry(), &built);
    if (built && registry_ != nullptr) call_->metrics().SetSceneBytes(registry_->memory_bytes());
    tracker_ = std::make_unique<core::Tracker>(call_->entry().scene, std::move(geometry));
    return tracker_.get();
  }

  // The embedded request's scene_id is empty or the session's.
  core::Status SameScene(const std::string& id, const char* kind) const {
    if (id.empty() || id == call_->entry().id || id == call_->entry().info.scene_id()) return {};
    return core::InvalidArgument(std::string(kind) + ".scene_id: '" + id +
                                 "' is not the session's scene '" + call_->entry().id +
                                 "' (leave it empty, or open another session)");
  }

  // Errors name their field within the query ("state.state: ..."); the query's place is added here,
  // so that a query that succeeds builds no message.
  void Fail(int i, core::Error e, v1::SessionAnswer* answer) {
    e.message = "queries[" + std::to_string(i) + "]." + e.message;
    ++errors_;
    ErrorAnswer(e, answer);
  }

  // A state query's configuration into *q, or its error.
  core::Status ResolveStateQuery(const v1::SessionQuery& query, std::vector<double>* q) const {
    const v1::CheckStateRequest& in = query.state();
    if (core::Status s = SameScene(in.scene_id(), "state"); !s.ok()) return s;
    return ResolveState(scene_.robot(), in.state(), "state.state", q);
  }

  // A state query's answer from its CLEAR.
  void StateAnswer(const core::StateResult& r, v1::SessionAnswer* answer) {
    v1::CheckStateResponse* out = answer->mutable_state();
    ToWire(scene_, r, out);
    const Work work = StateWork(r);
    work.ToWire(out->mutable_stats());
    clear_work_ += work;
    ++clear_;
  }

  // The state queries [begin, end) of `request`, answered into `response` in order: those that resolve
  // are checked by one Scene::CheckStates call, the others are error answers. A configuration the core
  // refuses (a value beyond its range) sends the run through AnswerOne, one query at a time, so that
  // every answer, error or not, is the one a lone query gets.
  void AnswerStates(const v1::SessionRequest& request, int begin, int end, v1::SessionResponse* response) {
    const auto dof = static_cast<size_t>(scene_.dof());
    const int first = response->answers_size();
    rows_.clear();
    checked_.clear();
    for (int i = begin; i < end; ++i) {
      const v1::SessionQuery& query = request.queries(i);
      v1::SessionAnswer* answer = response->add_answers();
      answer->set_id(query.id());
      if (core::Status s = ResolveStateQuery(query, &q0_); !s.ok()) {
        Fail(i, s.error(), answer);
        continue;
      }
      rows_.insert(rows_.end(), q0_.begin(), q0_.end());
      checked_.push_back(i);
    }
    if (checked_.empty()) return;
    results_.resize(checked_.size());
    const std::span<core::StateResult> results(results_.data(), checked_.size());
    if (scene_.CheckStates(std::span<const double>(rows_.data(), checked_.size() * dof), results, Cache()).ok()) {
      for (size_t k = 0; k < checked_.size(); ++k) {
        StateAnswer(results[k], response->mutable_answers(first + checked_[k] - begin));
      }
      return;
    }
    for (const int i : checked_) {
      bool valid = true;
      (void)AnswerOne(i, request.queries(i), response->mutable_answers(first + i - begin), &valid);
    }
  }

  // Every state query of `request` in the query ranges [first, second) of `ranges` CLEARed by one
  // Scene::CheckStates call: results_[state_at_[i]] is query i's. False (nothing kept) when there are
  // fewer than two, or one does not resolve or the core refuses it: those go one at a time, so that
  // every answer, error or not, is a lone query's.
  bool CheckStateQueries(const v1::SessionRequest& request, std::span<const std::pair<int, int>> ranges) {
    const auto dof = static_cast<size_t>(scene_.dof());
    rows_.clear();
    state_at_.assign(static_cast<size_t>(request.queries_size()), -1);
    int32_t count = 0;
    for (const auto& [begin, end] : ranges) {
      for (int i = begin; i < end; ++i) {
        const v1::SessionQuery& query = request.queries(i);
        if (query.query_case() != v1::SessionQuery::kState) continue;
        if (!ResolveStateQuery(query, &q0_).ok()) return false;
        rows_.insert(rows_.end(), q0_.begin(), q0_.end());
        state_at_[static_cast<size_t>(i)] = count++;
      }
    }
    if (count < 2) return false;
    results_.resize(static_cast<size_t>(count));
    return scene_
        .CheckStates(std::span<const double>(rows_.data(), static_cast<size_t>(count) * dof),
                     std::span<core::StateResult>(results_.data(), static_cast<size_t>(count)), Cache())
        .ok();
  }

  // Query i of `request` answered into a new answer of `response` and counted: a state from the batch
  // CheckStateQueries made when `batched`, anything else by AnswerOne.
  grpc::Status AnswerQuery(const v1::SessionRequest& request, int i, bool batched, v1::SessionResponse* response,
                           bool* valid) {
    const v1::SessionQuery& query = request.queries(i);
    v1::SessionAnswer* answer = response->add_answers();
    answer->set_id(query.id());
    if (batched && query.query_case() == v1::SessionQuery::kState) {
      const core::StateResult& r = results_[static_cast<size_t>(state_at_[static_cast<size_t>(i)])];
      StateAnswer(r, answer);
      *valid = r.free && r.within_limits;
    } else if (grpc::Status s = AnswerOne(i, query, answer, valid); !s.ok()) {
      return s;
    }
    ++queries_;
    return grpc::Status::OK;
  }

  grpc::Status AnswerOne(int i, const v1::SessionQuery& query, v1::SessionAnswer* answer, bool* valid) {
    auto fail = [&](core::Error e) {
      *valid = false;
      Fail(i, std::move(e), answer);
      return grpc::Status::OK;
    };
    switch (query.query_case()) {
      case v1::SessionQuery::kState: {
        if (core::Status s = ResolveStateQuery(query, &q0_); !s.ok()) return fail(s.error());
        const core::Result<core::StateResult> checked = scene_.CheckState(q0_, Cache());
        if (!checked.ok()) return fail(WithField("state", checked.error()));
        const core::StateResult& r = checked.value();
        StateAnswer(r, answer);
        *valid = r.free && r.within_limits;
        return grpc::Status::OK;
      }
      case v1::SessionQuery::kMotion: {
        if (core::Status s = SameScene(query.motion().scene_id(), "motion"); !s.ok()) return fail(s.error());
        v1::CheckMotionResponse* out = answer->mutable_motion();
        const Answered a = AnswerMotion(scene_, query.motion(), "motion", Scratch(), call_->interrupt(), nullptr, out);
        if (!a.status.ok()) return fail(a.status.error());
        link_work_ += a.work;
        if (a.stopped) return call_->cancel().status(Progress());
        ++link_;
        *valid = out->result().free();
        return grpc::Status::OK;
      }
      case v1::SessionQuery::kDistance: {
        if (core::Status s = SameScene(query.distance().scene_id(), "distance"); !s.ok()) return fail(s.error());
        v1::ComputeDistanceResponse* out = answer->mutable_distance();
        const Answered a =
            AnswerDistance(scene_, query.distance(), "distance", Scratch(), call_->interrupt(), nullptr, out);
        if (!a.status.ok()) return fail(a.status.error());
        distance_work_ += a.work;
        if (a.stopped) return call_->cancel().status(Progress());
        ++distance_;
        *valid = out->lower_bound() > 0.0;
        return grpc::Status::OK;
      }
      case v1::SessionQuery::kTrack: {
        const v1::TrackRequest& in = query.track();
        if (core::Status s = SameScene(in.scene_id(), "track"); !s.ok()) return fail(s.error());
        if (core::Status s = ResolveState(scene_.robot(), in.state(), "track.state", &q0_); !s.ok()) {
          return fail(s.error());
        }
        core::Result<core::TrackRequest> options = ToTrackRequest(in, "track.");
        if (!options.ok()) return fail(options.error());
        core::TrackRequest request = std::move(options).value();
        request.stop = call_->interrupt();
        core::Tracker* tracker = Tracker();
        // Each frame is made in the storage of the one before (no allocation once sizes settle).
        const core::Status tracked = tracker->Update(q0_, request, &track_result_);
        const int64_t bytes = tracker->MemoryBytes();
        tracker_bytes_ = std::max(tracker_bytes_, bytes);
        if (max_tracker_bytes_ > 0 && bytes > max_tracker_bytes_) {
          tracker->Reset();  // past the cap: the next query starts cold (the same answers)
          ++tracker_resets_;
        }
        if (!tracked.ok()) return fail(WithField("track", tracked.error()));
        const core::TrackResult& r = track_result_;
        const Work work = TrackWork(r);
        track_work_ += work;
        if (r.stopped) return call_->cancel().status(Progress());
        v1::TrackResponse* out = answer->mutable_track();
        ToWire(scene_, r, out);
        work.ToWire(out->mutable_stats());
        ++track_;
        *valid = TrackApart(r);
        return grpc::Status::OK;
      }
      case v1::SessionQuery::QUERY_NOT_SET:
        break;
    }
    return fail(core::InvalidArgument("query: none of state, motion, distance or track is set (a query kind this "
                                      "server does not know?)"));
  }

  std::string Progress() const {
    return std::to_string(batches_) + " batches, " + std::to_string(queries_) + " queries of the session";
  }

  CallScope* call_;
  SceneRegistry* registry_;
  const core::Scene& scene_;
  bool cold_;
  std::vector<double> q0_;
  QueryScratch scratch_;
  // A run of state queries: their configurations row after row, their places and CLEARs.
  std::vector<double> rows_;
  std::vector<int> checked_;
  std::vector<core::StateResult> results_;
  std::vector<int32_t> state_at_;  // chains: query -> its row of results_ (-1: not a state)
  // Chains: each chain's first query (and the batch's size last), whether each ended complete, and the
  // chains of a run that are answered and their query ranges.
  std::vector<int> chain_begin_;
  std::vector<char> complete_;
  std::vector<size_t> live_;
  std::vector<std::pair<int, int>> ranges_;
  core::SceneCache cache_;
  core::SceneCache cold_cache_;
  std::unique_ptr<core::Tracker> tracker_;
  core::TrackResult track_result_;  // the last frame's answer, whose storage the next one reuses
  int64_t max_tracker_bytes_;
  int64_t tracker_bytes_ = 0;  // the most the tracker held after a query
  int64_t tracker_resets_ = 0;  // times it held more than max_tracker_bytes_ and forgot its warm starts
  int64_t batches_ = 0, queries_ = 0, errors_ = 0;
  int64_t clear_ = 0, link_ = 0, distance_ = 0, track_ = 0;
  Work clear_work_, link_work_, distance_work_, track_work_;
};

// A session's place in the service's set of open sessions while it lives.
class SessionSlot {
 public:
  SessionSlot(std::mutex* mutex, std::set<grpc::ServerContext*>* open, const bool* ended,
              grpc::ServerContext* context)
      : mutex_(mutex), open_(open), context_(context) {
    std::lock_guard lock(*mutex_);
    refused_ = *ended;
    if (!refused_) open_->insert(context_);
  }
  ~SessionSlot() {
    std::lock_guard lock(*mutex_);
    open_->erase(context_);
  }
  SessionSlot(const SessionSlot&) = delete;
  SessionSlot& operator=(const SessionSlot&) = delete;
  bool refused() const { return refused_; }

 private:
  std::mutex* mutex_;
  std::set<grpc::ServerContext*>* open_;
  grpc::ServerContext* context_;
  bool refused_ = false;
};

}  // namespace

void ProximityServiceImpl::EndSessions() {
  std::lock_guard lock(sessions_mutex_);
  sessions_ended_ = true;
  for (grpc::ServerContext* context : sessions_) context->TryCancel();
}

grpc::Status ProximityServiceImpl::Session(
    grpc::ServerContext* context, grpc::ServerReaderWriter<v1::SessionResponse, v1::SessionRequest>* stream) {
  return opening_.Serve(context, Rpc::kSession, {}, [&](CallScope& call) -> grpc::Status {
    const SessionSlot slot(&sessions_mutex_, &sessions_, &sessions_ended_, context);
    if (slot.refused()) return SessionRefusedWhileDraining();
    // The watchdog ends the stream just after its deadline or --max-call-seconds even while Read or
    // Write blocks.
    call.WatchStream();
    v1::SessionRequest request;
    if (!stream->Read(&request)) {
      if (call.cancel().Stopped()) return call.cancel().status("the session's opening");
      return grpc::Status::OK;  // the client closed its side without opening: nothing to answer
    }
    if (!request.has_open()) {
      return ToGrpcStatus(core::InvalidArgument(
          "open: the first SessionRequest of a session must carry open (the session's scene_id)"));
    }
    const v1::SessionOpen& open = request.open();
    if (open.scene_id().empty()) return ToGrpcStatus(core::InvalidArgument("open.scene_id: empty"));
    std::shared_ptr<const SceneEntry> entry = registry_->Find(open.scene_id());
    if (entry == nullptr) return SceneNotFound(open.scene_id());
    call.set_entry(std::move(entry));
    const SceneEntry& scene = call.entry();

    SessionState session(&call, open.cold_caches(), registry_, limits_.max_tracker_bytes);
    v1::SessionResponse response;
    v1::SessionOpened* opened = response.mutable_opened();
    opened->set_scene_id(scene.info.scene_id());
    opened->set_version(scene.info.version());
    opened->set_dof(static_cast<uint32_t>(scene.scene->dof()));
    opened->set_max_batch(static_cast<uint32_t>(limits_.max_session_batch));
    grpc::Status status = grpc::Status::OK;
    for (bool first = true;; first = false) {
      if (!first && request.has_open()) {
        status = ToGrpcStatus(core::InvalidArgument(
            "open: batch " + std::to_string(session.batches()) + " carries open again; a session opens once"));
        break;
      }
      if (request.queries_size() > limits_.max_session_batch) {
        status = ToGrpcStatus(core::ResourceExhausted(
            "queries: a batch of " + std::to_string(request.queries_size()) + " queries exceeds the server's " +
            std::string(kSessionBatchOption) + " = " + std::to_string(limits_.max_session_batch) +
            "; split the batch"));
        break;
      }
      if (core::Status chains = CheckChains(request); !chains.ok()) {
        status = ToGrpcStatus(chains.error());
        break;
      }
      status = session.Answer(request, &response);
      if (!status.ok()) break;
      session.AddBatch();
      status = call.FitResponse(&response, "send smaller batches, leave out per_pair or lower track max_pairs");
      if (!status.ok()) break;
      if (!stream->Write(response)) {
        call.metrics().AddFailedSend();
        status = call.cancel().Stopped() ? call.cancel().status(std::to_string(session.queries()) + " queries")
                                         : SessionClientGone();
        break;
      }
      response.clear_opened();
      if (!stream->Read(&request)) {
        // The client closed its side (OK), or the stream was cancelled, expired or ended by the drain.
        if (call.cancel().Stopped()) {
          status = call.cancel().status(std::to_string(session.batches()) + " batches, " +
                                        std::to_string(session.queries()) + " queries of the session");
        }
        break;
      }
    }
    session.Record();
    return status;
  });
}

}  // namespace proximity::server
