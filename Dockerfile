# Multi-stage image: build Proximity on Debian bookworm, ship the tools on a slim runtime.
# Build: podman build -t localhost/proximity . (or docker build); run: podman run --rm localhost/proximity --help
FROM debian:bookworm-slim AS build
RUN apt-get update && apt-get install -y --no-install-recommends \
      build-essential cmake ninja-build pkg-config libeigen3-dev libassimp-dev libcli11-dev \
      liburdfdom-dev libtinyxml2-dev libqhull-dev libyaml-cpp-dev zlib1g-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY CMakeLists.txt ./
COPY cmake cmake
COPY core core
COPY tools tools
RUN cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release -DPROX_NATIVE=OFF \
      -DPROX_BUILD_TESTS=OFF -DPROX_BUILD_BENCH=OFF \
    && cmake --build /build -j"$(nproc)"

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends \
      libassimp5 liburdfdom-model3.0 libtinyxml2-9 libqhull-r8.0 libyaml-cpp0.7 \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /build/tools/proximity-mesh /usr/local/bin/proximity-mesh
USER 65534
ENTRYPOINT ["/usr/local/bin/proximity-mesh"]
