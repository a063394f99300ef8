# Robot flags of the A/B scripts here (sourced): F[<robot>] holds the robot, SRDF and package flags of
# proximity-bench; the KR5 is a copy of dart-doc's KR5 folder with its URDF renamed without spaces.
S=/work/shared/data; T=/work/main/tests/data/robots; D=/usr/share/doc/dart/data/urdf
declare -A F
F[panda]="--robot $S/robots/panda/moveit_resources_panda_description/urdf/panda.urdf --srdf $S/robots/panda/moveit_resources_panda_moveit_config/config/panda.srdf --package moveit_resources_panda_description=$S/robots/panda/moveit_resources_panda_description --group panda_arm"
F[mbm_panda]="--robot $S/robots/mbm_panda/panda.urdf --srdf $S/robots/mbm_panda/panda.srdf --package meshes=$S/robots/mbm_panda/meshes"
F[ur5]="--robot $S/robots/ur5/ur_description/urdf/ur5_robot.urdf --srdf $S/robots/ur5/ur5_moveit_config/config/ur5.srdf --package ur_description=$S/robots/ur5/ur_description"
F[ur5_visual]="${F[ur5]} --collision-from-visual"
F[kr5]="--robot /tmp/kr5/KR5_sixx_R650.urdf"
F[wam]="--robot $D/wam/wam.urdf --srdf $T/wam.srdf --package herb_description=$D/wam"
F[hubo_left_arm]="--robot $D/drchubo/drchubo.urdf --srdf $T/drchubo.srdf --package drchubo=$D/drchubo --group left_arm"
