// Scene names: given at CreateScene or by NameScene, accepted wherever a scene id is, listed in
// SceneInfo.names, unique (ALREADY_EXISTS, nothing created), moved only when asked, dropped with the
// scene; bad names named.
#include "server/scene_store.h"
#include "tests/server/service_fixture.h"

namespace proximity::server::testing {
namespace {

TEST_F(ServiceTest, ScenesHaveUniqueNamesAcceptedWhereverAnIdIs) {
  v1::CreateSceneRequest first = PlanarRequest(1.2);
  first.set_name("cell-1");
  v1::CreateSceneResponse a;
  ASSERT_TRUE(stub_->CreateScene(Context().get(), first, &a).ok());
  ASSERT_EQ(a.scene().names_size(), 1);
  EXPECT_EQ(a.scene().names(0), "cell-1");
  const std::string id = a.scene().scene_id();
  // A name is not content: the same request without it has the same id.
  v1::CreateSceneResponse unnamed;
  ASSERT_TRUE(stub_->CreateScene(Context().get(), PlanarRequest(1.2), &unnamed).ok());
  EXPECT_EQ(unnamed.scene().scene_id(), id);
  EXPECT_FALSE(unnamed.created());

  // By name: GetScene and a query.
  v1::GetSceneRequest get;
  get.set_scene_id("cell-1");
  v1::GetSceneResponse got;
  ASSERT_TRUE(stub_->GetScene(Context().get(), get, &got).ok());
  EXPECT_EQ(got.scene().scene_id(), id);
  v1::CheckStateRequest check;
  check.set_scene_id("cell-1");
  check.mutable_state()->add_positions(0.0);
  check.mutable_state()->add_positions(0.0);
  v1::CheckStateResponse checked;
  ASSERT_TRUE(stub_->CheckState(Context().get(), check, &checked).ok());

  // The same name for other content: refused, nothing created.
  v1::ListScenesResponse before, after;
  ASSERT_TRUE(stub_->ListScenes(Context().get(), {}, &before).ok());
  v1::CreateSceneRequest second = PlanarRequest(1.3);
  second.set_name("cell-1");
  v1::CreateSceneResponse b;
  grpc::Status status = stub_->CreateScene(Context().get(), second, &b);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::ALREADY_EXISTS);
  EXPECT_NE(status.error_message().find("'cell-1' already names scene " + id), std::string::npos)
      << status.error_message();
  ASSERT_TRUE(stub_->ListScenes(Context().get(), {}, &after).ok());
  EXPECT_EQ(after.scenes_size(), before.scenes_size());
  // Listed with its name.
  bool listed = false;
  for (const v1::SceneInfo& s : after.scenes()) listed |= s.scene_id() == id && s.names_size() == 1;
  EXPECT_TRUE(listed);

  // The same content under the same name again: the same scene.
  ASSERT_TRUE(stub_->CreateScene(Context().get(), first, &b).ok());
  EXPECT_FALSE(b.created());
  EXPECT_EQ(b.scene().scene_id(), id);

  // Reassigned: the name moves to the new scene.
  second.set_reassign_name(true);
  ASSERT_TRUE(stub_->CreateScene(Context().get(), second, &b).ok());
  EXPECT_NE(b.scene().scene_id(), id);
  ASSERT_TRUE(stub_->GetScene(Context().get(), get, &got).ok());
  EXPECT_EQ(got.scene().scene_id(), b.scene().scene_id());

  // NameScene: another name (an alias), then taken away.
  v1::NameSceneRequest name;
  name.set_scene_id(id);
  name.set_name("old_cell");
  v1::NameSceneResponse named;
  ASSERT_TRUE(stub_->NameScene(Context().get(), name, &named).ok());
  EXPECT_EQ(named.scene().scene_id(), id);
  name.set_scene_id("old_cell");
  name.set_name("spare.1");
  ASSERT_TRUE(stub_->NameScene(Context().get(), name, &named).ok());
  EXPECT_EQ(named.scene().names_size(), 2);
  name.set_name("cell-1");  // held by the other scene
  status = stub_->NameScene(Context().get(), name, &named);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::ALREADY_EXISTS);
  name.set_name("spare.1");
  name.set_remove(true);
  ASSERT_TRUE(stub_->NameScene(Context().get(), name, &named).ok());
  EXPECT_EQ(named.scene().names_size(), 1);
  status = stub_->NameScene(Context().get(), name, &named);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);

  // Deleted by name: its names go with it.
  v1::DeleteSceneRequest del;
  del.set_scene_id("old_cell");
  v1::DeleteSceneResponse deleted;
  ASSERT_TRUE(stub_->DeleteScene(Context().get(), del, &deleted).ok());
  get.set_scene_id("old_cell");
  EXPECT_EQ(stub_->GetScene(Context().get(), get, &got).error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(ServiceTest, BadSceneNamesAreNamed) {
  for (const std::string& bad : {std::string("default"), std::string("-x"), std::string("a b"),
                                 std::string(65, 'a'), std::string("0123456789abcdef0123456789abcdef")}) {
    v1::CreateSceneRequest r = PlanarRequest(1.4);
    r.set_name(bad);
    v1::CreateSceneResponse response;
    const grpc::Status status = stub_->CreateScene(Context().get(), r, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << bad;
    EXPECT_NE(status.error_message().find("name"), std::string::npos) << status.error_message();
  }
  v1::NameSceneRequest name;
  name.set_scene_id("no-such-scene");
  name.set_name("ok");
  v1::NameSceneResponse named;
  EXPECT_EQ(stub_->NameScene(Context().get(), name, &named).error_code(), grpc::StatusCode::NOT_FOUND);
}

}  // namespace
}  // namespace proximity::server::testing
