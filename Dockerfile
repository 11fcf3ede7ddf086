# syntax=docker/dockerfile:1
# The Cat Comfort service as a container image (docs/operations.md "Container"):
#   docker build -t catcomfort .
#   docker build --build-context model-mirror=../shared/models -t catcomfort .
# The second form takes bc-legacy's YOLOX-nano detector from a local folder (CATCOMFORT_MODEL_MIRROR)
# instead of downloading it from its release URL. Either way `npm ci` needs the npm registry and
# cmake-js fetches the Node.js headers, so the build stage needs network access.
#
# Stage "build": Node.js 20 on Debian bookworm with CMake and g++. `npm ci` builds the addon, compiles
# the TypeScript and installs every model file (sha256-checked); then the offline bundle tool lays out
# exactly what the service runs (src/tools/bundle.ts): Node.js, dist/src, build/Release (addon,
# ONNX Runtime, libvips), the packs with their model files, the production node_modules.
# Stage "runtime": Debian bookworm slim with that folder only, run as an unprivileged user.

ARG NODE_VERSION=20

# The model mirror: empty unless replaced with --build-context model-mirror=DIR.
FROM scratch AS model-mirror

FROM node:${NODE_VERSION}-bookworm AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends cmake \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY package.json package-lock.json CMakeLists.txt tsconfig.json ./
COPY native/ native/
COPY src/ src/
COPY proto/ proto/
COPY models/ models/
RUN --mount=type=bind,from=model-mirror,target=/mirror \
    if [ -f /mirror/yolox-nano/yolox_nano.onnx ]; then export CATCOMFORT_MODEL_MIRROR=/mirror; fi \
 && if [ -f /mirror/mobilenetv2-12-int8/mobilenetv2-12-int8.onnx ]; then export CATCOMFORT_MODEL_MIRROR=/mirror; fi \
 && npm ci \
 && node dist/src/tools/bundle.js --dir /opt

FROM debian:bookworm-slim AS runtime
# libjemalloc2: the malloc bin/catcomfort-service preloads (docs/operations.md "Memory").
RUN apt-get update \
 && apt-get install -y --no-install-recommends libjemalloc2 \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --user-group --uid 10001 --create-home --home-dir /var/lib/catcomfort --shell /usr/sbin/nologin catcomfort \
 && install -d -o catcomfort -g catcomfort /var/lib/catcomfort/data
COPY --from=build /opt/catcomfort /opt/catcomfort
ENV PATH=/opt/catcomfort:$PATH \
    CATCOMFORT_HOST=0.0.0.0 \
    CATCOMFORT_PORT=8080 \
    CATCOMFORT_DATA_DIR=/var/lib/catcomfort/data
USER catcomfort
WORKDIR /var/lib/catcomfort
VOLUME /var/lib/catcomfort/data
EXPOSE 8080
# GET /readyz: healthy once every pack has warmed up, unhealthy while draining (no curl in the image).
HEALTHCHECK --interval=10s --timeout=6s --start-period=120s --retries=3 \
  CMD ["/opt/catcomfort/node/bin/node", "/opt/catcomfort/app/dist/src/tools/healthcheck.js"]
CMD ["/opt/catcomfort/run"]
