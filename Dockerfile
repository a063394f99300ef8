# Multi-stage image: build Proximity on Debian bookworm, ship proximityd (and the two tools) on a slim runtime.
# Build: podman build --pull=never -t localhost/proximityd . (or docker build); scripts/container.sh builds,
# runs and checks it. Run: podman run -d -p 127.0.0.1:50051:50051 -p 127.0.0.1:9464:9464 localhost/proximityd
# (extra arguments are appended to proximityd's flags, e.g. `--log-format text` or `--help`).

# Stage 1: scripts/setup.sh's packages for the product only (no GoogleTest, FCL, OMPL, Python or dart-doc:
# tests and benchmarks are off, and the OMPL adapter is skipped when OMPL is absent).
FROM debian:bookworm-slim AS build
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential cmake ninja-build pkg-config \
      libeigen3-dev libassimp-dev zlib1g-dev liburdfdom-dev libtinyxml2-dev libqhull-dev libyaml-cpp-dev \
      libcli11-dev \
      libgrpc++-dev libgrpc-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler grpc-proto \
      libspdlog-dev libfmt-dev libboost-dev nlohmann-json3-dev libxxhash-dev \
    && apt-get clean && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY CMakeLists.txt ./
COPY cmake cmake
COPY core core
COPY planners planners
COPY tools tools
COPY proto proto
COPY server server
COPY clients clients
# PROX_NATIVE=OFF: no -march=native, so the image runs on any x86-64 host.
RUN cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release -DPROX_NATIVE=OFF \
      -DPROX_BUILD_TESTS=OFF -DPROX_BUILD_BENCH=OFF \
    && cmake --build /build -j"$(nproc)" --target proximityd proximity-mesh proximity-scene \
    && strip /build/server/proximityd /build/tools/proximity-mesh /build/tools/proximity-scene

# Stage 2: the binaries' runtime libraries (their NEEDED entries, by Debian package) and dart-doc, whose
# KUKA KR5 URDF and meshes (/usr/share/doc/dart/data/urdf/KR5/) make the built-in default scene;
# libjs-three: the three.js the viewer (/viewer on the metrics port) serves.
FROM debian:bookworm-slim
# Slim images may carry a dpkg filter that drops /usr/share/doc/* (Docker Hub's debian:*-slim does, in
# /etc/dpkg/dpkg.cfg.d/docker): let dart-doc's data through (this file sorts after it, and the last
# matching filter wins), then make sure the default scene's files are really there. apt-get clean: a base
# made with debootstrap has no docker-clean hook and would keep the downloaded .debs in the layer.
RUN printf 'path-include=/usr/share/doc/dart/*\n' > /etc/dpkg/dpkg.cfg.d/zz-proximity-dart-doc \
    && apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libabsl20220623 libassimp5 libfmt9 libgrpc29 libgrpc++1.51 libprotobuf32 \
      libqhull-r8.0 libspdlog1.10 libstdc++6 libtinyxml2-9 liburdfdom-model3.0 libxxhash0 libyaml-cpp0.7 \
      dart-doc libjs-three \
    && apt-get clean && rm -rf /var/lib/apt/lists/* \
    && test -f "/usr/share/doc/dart/data/urdf/KR5/KR5 sixx R650.urdf" \
    && test "$(ls /usr/share/doc/dart/data/urdf/KR5/meshes/*.STL | wc -l)" -ge 7 \
    && test -f /usr/share/javascript/three/build/three.min.js
COPY --from=build /build/server/proximityd /build/tools/proximity-mesh /build/tools/proximity-scene /usr/local/bin/
# A base imported from a root filesystem (podman import) has no PATH of its own.
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
USER 65534
EXPOSE 50051 9464
ENTRYPOINT ["proximityd", "--listen", "0.0.0.0:50051", "--metrics-listen", "0.0.0.0:9464"]
