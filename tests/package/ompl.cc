// proximity::planners_ompl from an installed package: OMPL's SpaceInformation over an in-process scene
// of the planar two-link arm; a free and a colliding configuration as OMPL sees them.
//
// Usage: package_ompl <planar_2link.urdf>
#include <cstdio>
#include <vector>

#include "proximity/planners/ompl_adapter.h"

int main(int argc, char** argv) {
  namespace core = proximity::core;
  if (argc != 2) return 2;
  auto robot = core::RobotModel::FromUrdfFile(argv[1]);
  if (!robot.ok()) {
    std::printf("FAIL: %s\n", robot.error().message.c_str());
    return 1;
  }
  core::SceneDescription d;
  d.robot = robot.value();
  core::WorldObject block;
  block.id = "block";
  core::ObjectPart part;
  part.geometry.shape = core::Box{core::Vec3(0.3, 0.3, 0.2)};
  part.X_WG.p = core::Vec3(1.5, 0.0, 0.1);
  block.parts.push_back(part);
  d.objects.push_back(block);
  auto scene = core::Scene::Build(d);
  auto setup = scene.ok() ? proximity::planners::MakeOmplSetup(scene.value())
                          : proximity::core::Result<proximity::planners::OmplSetup>(scene.error());
  if (!setup.ok()) {
    std::printf("FAIL: %s\n", setup.error().message.c_str());
    return 1;
  }
  const proximity::planners::OmplSetup& s = setup.value();
  ompl::base::State* away = s.NewState(std::vector<double>{3.0, 0.0});
  ompl::base::State* into = s.NewState(std::vector<double>{0.0, 0.0});
  const bool ok = s.si->getStateDimension() == 2 && s.si->isValid(away) && !s.si->isValid(into) && s.status().ok();
  s.si->freeState(away);
  s.si->freeState(into);
  std::printf("%s: OMPL over the scene: (3, 0) valid, (0, 0) invalid\n", ok ? "ok  " : "FAIL");
  return ok ? 0 : 1;
}
