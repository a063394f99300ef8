// ComputeContacts and ComputeSignedDistance (contacts.cc) answer as proximity::contact does in process, on
// the default scene; bad input is named.
#include "proximity/core/contact/scene_contacts.h"
#include "tests/server/service_fixture.h"

namespace proximity::server::testing {
namespace {

TEST_F(ServiceTest, ComputeContactsMatchesCoreOnTheDefaultScene) {
  std::mt19937_64 rng(19);
  core::SceneCache cache;
  int colliding = 0;
  for (int k = 0; k < Cases(200); ++k) {
    const auto q = RandomState(rng, core_->robot());
    v1::ComputeContactsRequest request;
    request.set_scene_id("default");
    *request.mutable_state() = Positions(q);
    v1::ComputeContactsResponse response;
    const grpc::Status status = stub_->ComputeContacts(Context().get(), request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    PROX_ASSERT_OK_AND_ASSIGN(const core::SceneContactResult r, core::ComputeSceneContacts(*core_, q, {}, &cache));
    PROX_ASSERT_OK_AND_ASSIGN(const core::StateResult clear, core_->CheckState(q, &cache));
    ASSERT_EQ(response.contacts_size(), static_cast<int>(r.pairs.size())) << "state " << k;
    EXPECT_EQ(response.contacts().empty(), clear.free);
    if (!clear.free) ++colliding;
    for (int i = 0; i < response.contacts_size(); ++i) {
      const v1::PairContact& c = response.contacts(i);
      const core::PairPenetration& p = r.pairs[static_cast<size_t>(i)];
      ExpectSamePair(*core_, p.pair, c.pair(), "state " + std::to_string(k));
      EXPECT_EQ(c.depth(), p.depth);
      EXPECT_EQ(c.depth_lower(), p.depth_lower);
      EXPECT_EQ(c.depth_upper(), p.depth_upper);
      EXPECT_EQ(c.normal().x(), p.normal_W.x());
      EXPECT_EQ(c.points_size(), static_cast<int>(p.points.size()));
      EXPECT_GT(c.depth(), -1e-9);
      EXPECT_NE(c.method(), v1::PENETRATION_METHOD_UNSPECIFIED);
    }
  }
  EXPECT_GT(colliding, 5);
}

TEST_F(ServiceTest, ComputeSignedDistanceIsNegativeExactlyWhenThePairCollides) {
  std::mt19937_64 rng(20);
  core::SceneCache cache;
  const std::string object = core_->objects().at(0).id;
  const std::string link = core_->robot().links().back().name;
  int inside = 0, apart = 0;
  for (int k = 0; k < Cases(100); ++k) {
    const auto q = RandomState(rng, core_->robot());
    v1::ComputeSignedDistanceRequest request;
    request.set_scene_id("default");
    *request.mutable_state() = Positions(q);
    request.set_first(object);  // a world object first: the answer puts the robot side first
    request.set_second(link);
    request.set_rel_err(0.01);
    v1::ComputeSignedDistanceResponse response;
    const grpc::Status status = stub_->ComputeSignedDistance(Context().get(), request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    core::PairSignedDistanceRequest budget;
    budget.rel_err = 0.01;
    PROX_ASSERT_OK_AND_ASSIGN(const core::PairSignedDistance d,
                              core::ComputePairSignedDistance(*core_, object, link, q, budget, &cache));
    EXPECT_EQ(response.distance(), d.distance);
    EXPECT_EQ(response.lower(), d.lower);
    EXPECT_EQ(response.upper(), d.upper);
    EXPECT_EQ(response.pair().robot(), link);
    EXPECT_EQ(response.pair().other(), object);
    EXPECT_LE(response.lower(), response.distance());
    EXPECT_GE(response.upper(), response.distance());
    (response.distance() < 0 ? inside : apart) += 1;
  }
  EXPECT_GT(apart, 0);
}

TEST_F(ServiceTest, ContactCallsNameBadInput) {
  const std::string object = core_->objects().at(0).id;
  v1::ComputeSignedDistanceRequest request;
  request.set_scene_id("default");
  *request.mutable_state() = Positions(core_->robot().DefaultConfiguration());
  request.set_first(object);
  request.set_second("no_such_link");
  v1::ComputeSignedDistanceResponse response;
  grpc::Status status = stub_->ComputeSignedDistance(Context().get(), request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("second 'no_such_link'"), std::string::npos) << status.error_message();
  request.set_second("");
  status = stub_->ComputeSignedDistance(Context().get(), request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("second"), std::string::npos) << status.error_message();
  request.set_second(core_->objects().at(1).id);
  status = stub_->ComputeSignedDistance(Context().get(), request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("both world objects"), std::string::npos) << status.error_message();

  v1::ComputeContactsRequest contacts;
  contacts.set_scene_id("default");
  *contacts.mutable_state() = Positions(core_->robot().DefaultConfiguration());
  contacts.set_max_pairs(1'000'000);
  v1::ComputeContactsResponse answer;
  status = stub_->ComputeContacts(Context().get(), contacts, &answer);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("max_pairs"), std::string::npos) << status.error_message();
  contacts.set_max_pairs(0);
  contacts.mutable_state()->add_positions(0.0);  // one value too many
  status = stub_->ComputeContacts(Context().get(), contacts, &answer);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  contacts.set_scene_id("no-such-scene");
  status = stub_->ComputeContacts(Context().get(), contacts, &answer);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
}

}  // namespace
}  // namespace proximity::server::testing
