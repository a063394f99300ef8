# What `cmake --install <build> [--prefix P]` puts under the prefix:
#
#   include/proximity/{core/<module>,planners,mbm,clients}/*.h   public headers only (never core/src/**)
#   lib/libproximity_{core,contact,mbm,planners[,planners_ompl],remote,proto}.a
#   lib/cmake/proximity/proximityConfig.cmake, proximityConfigVersion.cmake, proximityTargets.cmake
#                        (+ proximityOmplTargets.cmake, proximityRemoteTargets.cmake: the components)
#   bin/proximityd, proximity-mesh, proximity-scene[, proximity-bench], proximity (the Python CLI)
#   lib/python3.X/dist-packages/{proximity_client, proximity/v1, grpc_health/v1}   (PROX_INSTALL_PYTHONDIR)
#
# A consumer writes find_package(proximity REQUIRED) and links proximity::core, proximity::contact,
# proximity::mbm, proximity::planners; proximity::planners_ompl and proximity::remote are the components
# `ompl` and `remote` (find_package(proximity REQUIRED COMPONENTS remote)), loaded only when asked for,
# since they bring OMPL and gRPC.
#
# Not installed: proximity::server and proximity::default_scene. They are proximityd's insides (headers
# in server/, not under an include folder, included as "server/....h"), their interface changes with the
# daemon, and they pull spdlog, Boost (Beast, Asio), nlohmann-json and xxhash into any consumer. Programs talk to
# the service through its gRPC contract: proximity::remote (C++) or the Python client.
#
# Libraries are static unless BUILD_SHARED_LIBS=ON. Static is what every test here runs against, the
# installed programs need no library path, and a 0.x library makes no promise of a stable shared ABI
# (no soname versioning). Its cost: a consumer links the libraries' own dependencies, so
# proximityConfig.cmake then finds assimp, urdfdom, tinyxml2, Qhull and yaml-cpp too (their -dev packages
# must be installed). A shared build (its programs find the libraries through $ORIGIN/../lib) needs only
# Eigen3 in the consumer.

include(CMakePackageConfigHelpers)

set(PROX_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/proximity" CACHE STRING
  "Where proximityConfig.cmake is installed (relative to the prefix)")
if(EXISTS /usr/bin/python3)
  execute_process(COMMAND /usr/bin/python3 -c "import sys; print(f'{sys.version_info[0]}.{sys.version_info[1]}')"
    OUTPUT_VARIABLE prox_python_version OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
endif()
if(NOT prox_python_version)
  set(prox_python_version 3)
endif()
# Debian's python3 reads <prefix>/lib/python3.X/dist-packages for prefix /usr/local (the default).
set(PROX_INSTALL_PYTHONDIR "lib/python${prox_python_version}/dist-packages" CACHE STRING
  "Where the Python client and its gRPC stubs are installed (relative to the prefix, or absolute)")

get_target_property(prox_core_type proximity_core TYPE)
if(prox_core_type STREQUAL "STATIC_LIBRARY")
  set(PROX_PACKAGE_STATIC ON)
else()
  set(PROX_PACKAGE_STATIC OFF)
endif()

# ---- libraries and their headers -----------------------------------------------------------------
set(prox_lib_destinations
  ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}"
  LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}"
  RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")

install(TARGETS proximity_flags proximity_core proximity_contact proximity_mbm proximity_planners
  EXPORT proximityTargets ${prox_lib_destinations})
install(DIRECTORY "${PROJECT_SOURCE_DIR}/core/include/" "${PROJECT_SOURCE_DIR}/planners/include/"
                  "${PROJECT_SOURCE_DIR}/tools/mbm/include/"
  DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}" FILES_MATCHING PATTERN "*.h")
install(EXPORT proximityTargets NAMESPACE proximity:: FILE proximityTargets.cmake
  DESTINATION "${PROX_INSTALL_CMAKEDIR}")

set(PROX_PACKAGE_COMPONENTS "")
# OMPL's CMake config gives variables, not targets: proximity::planners_ompl names OMPL's include folder
# and libraries by their absolute paths on this machine (Debian's /usr/include/ompl-1.5, ...).
if(TARGET proximity_planners_ompl)
  install(TARGETS proximity_planners_ompl EXPORT proximityOmplTargets ${prox_lib_destinations})
  install(DIRECTORY "${PROJECT_SOURCE_DIR}/planners/ompl/include/"
    DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}" FILES_MATCHING PATTERN "*.h")
  install(EXPORT proximityOmplTargets NAMESPACE proximity:: FILE proximityOmplTargets.cmake
    DESTINATION "${PROX_INSTALL_CMAKEDIR}")
  list(APPEND PROX_PACKAGE_COMPONENTS ompl)
endif()
if(TARGET proximity_remote)
  # proximity::proto (the generated messages and stubs) is exported only because the static
  # proximity::remote links it; its generated headers are not installed.
  install(TARGETS proximity_remote proximity_proto EXPORT proximityRemoteTargets ${prox_lib_destinations})
  install(DIRECTORY "${PROJECT_SOURCE_DIR}/clients/cpp/include/"
    DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}" FILES_MATCHING PATTERN "*.h")
  install(EXPORT proximityRemoteTargets NAMESPACE proximity:: FILE proximityRemoteTargets.cmake
    DESTINATION "${PROX_INSTALL_CMAKEDIR}")
  list(APPEND PROX_PACKAGE_COMPONENTS remote)
endif()

configure_package_config_file("${CMAKE_CURRENT_LIST_DIR}/proximityConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/proximityConfig.cmake" INSTALL_DESTINATION "${PROX_INSTALL_CMAKEDIR}")
# 0.x: a minor release may break the interface.
write_basic_package_version_file("${PROJECT_BINARY_DIR}/proximityConfigVersion.cmake"
  VERSION "${PROJECT_VERSION}" COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/proximityConfig.cmake" "${PROJECT_BINARY_DIR}/proximityConfigVersion.cmake"
  DESTINATION "${PROX_INSTALL_CMAKEDIR}")

# ---- programs ------------------------------------------------------------------------------------
set(prox_programs)
foreach(program proximityd proximity-mesh proximity-scene proximity-bench)
  if(TARGET ${program})
    list(APPEND prox_programs ${program})
  endif()
endforeach()
# Shared libraries: the installed programs find them in ../lib, and each library finds the ones it
# links beside itself (a consumer's RUNPATH does not reach a library's own dependencies).
if(NOT PROX_PACKAGE_STATIC)
  set_target_properties(${prox_programs} PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
  foreach(library proximity_core proximity_contact proximity_mbm proximity_planners proximity_planners_ompl)
    if(TARGET ${library})
      set_target_properties(${library} PROPERTIES INSTALL_RPATH "$ORIGIN")
    endif()
  endforeach()
endif()
install(TARGETS ${prox_programs} RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")

# ---- the Python client: the package, its generated stubs and a `proximity` launcher ----------------
if(TARGET proximity_python_stubs)
  install(DIRECTORY "${PROX_PY_SRC_DIR}/proximity_client" DESTINATION "${PROX_INSTALL_PYTHONDIR}"
    PATTERN "__pycache__" EXCLUDE PATTERN "*.pyc" EXCLUDE)
  install(DIRECTORY "${PROX_PY_GEN_DIR}/" DESTINATION "${PROX_INSTALL_PYTHONDIR}"
    FILES_MATCHING PATTERN "*.py" PATTERN "*.pyi" PATTERN "__pycache__" EXCLUDE)
  if(IS_ABSOLUTE "${PROX_INSTALL_PYTHONDIR}")
    set(prox_launcher_pythonpath "${PROX_INSTALL_PYTHONDIR}")
  else()
    file(RELATIVE_PATH prox_launcher_pythonpath "/prefix/${CMAKE_INSTALL_BINDIR}" "/prefix/${PROX_INSTALL_PYTHONDIR}")
    set(prox_launcher_pythonpath "$here/${prox_launcher_pythonpath}")
  endif()
  file(CONFIGURE OUTPUT "${PROJECT_BINARY_DIR}/install/proximity" CONTENT [=[#!/bin/sh
# The proximity CLI (proximity_client) with the installed package and stubs, on Debian's interpreter.
here="$(cd "$(dirname "$0")" && pwd)"
PYTHONPATH="@prox_launcher_pythonpath@${PYTHONPATH:+:$PYTHONPATH}" exec /usr/bin/python3 -m proximity_client "$@"
]=] @ONLY)
  install(PROGRAMS "${PROJECT_BINARY_DIR}/install/proximity" DESTINATION "${CMAKE_INSTALL_BINDIR}")
endif()

# ---- what the installed code was compiled for --------------------------------------------------------
# No compile option of this build is exported (-march=native and the sanitizers are this project's
# directory options), but the installed objects were compiled with them: say so when installing.
set(prox_built_with)
if(PROX_NATIVE AND NOT PROX_SANITIZE AND NOT PROX_FUZZ)
  list(APPEND prox_built_with "-march=native (PROX_NATIVE=ON: the code runs only on CPUs like the build machine's, configure with -DPROX_NATIVE=OFF for a portable install)")
endif()
if(PROX_SANITIZE)
  list(APPEND prox_built_with "sanitizers (PROX_SANITIZE=${PROX_SANITIZE}: consumers must link with the same -fsanitize options)")
endif()
if(PROX_FUZZ)
  list(APPEND prox_built_with "libFuzzer instrumentation (PROX_FUZZ=ON)")
endif()
if(prox_built_with)
  string(JOIN " and " prox_built_with ${prox_built_with})
  install(CODE "message(STATUS \"Note: the installed libraries and programs were compiled with ${prox_built_with}\")")
endif()
