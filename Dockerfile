# syntax=docker/dockerfile:1
#
# The gateway as one static-ish binary on a distroless base: no shell, no package manager, non-root.
#
#   docker build -t gateway .
#   docker run --rm -p 8080:8080 \
#     -v "$PWD/config/gateway.yaml:/etc/gateway/gateway.yaml:ro" \
#     -v gateway-data:/var/lib/gateway \
#     -e GATEWAY_TOKEN=... -e OPENAI_API_KEY=... gateway
#
# The config is read from /etc/gateway/gateway.yaml (GATEWAY_CONFIG); the shipped one is baked in there as a
# fallback, so mount your own over it. The working directory /var/lib/gateway is a volume: the default
# config's usage database (data/usage.sqlite, relative) lands there. SIGTERM drains in-flight requests.

# Build stage: the official Bun image, Debian-based (glibc), pinned to the version CI uses.
FROM oven/bun:1.4.5 AS build
WORKDIR /src
COPY package.json bun.lock ./
RUN bun install --frozen-lockfile --production
COPY main.ts ./
COPY lib ./lib
COPY config ./config
# The usage store's worker, the config reload worker, the serving worker (`--workers N`) and the token-count
# worker are further entry points: bundled into the binary beside main.ts, sharing their common code
# (--splitting). The binary reads no .env or bunfig.toml from its working directory (the writable data volume):
# its environment is the process's.
RUN bun build --compile --no-compile-autoload-dotenv --no-compile-autoload-bunfig --minify --sourcemap --bytecode --format=esm --splitting --outfile /out/gateway main.ts \
  lib/usage/sqlite_worker.ts lib/config/config_worker.ts lib/workers/worker_main.ts lib/usage/token_count_worker.ts \
  && mkdir -p /out/var/lib/gateway/data

# Runtime stage: glibc and the C/C++ runtime libraries only (the binary needs libc, libm, libpthread, libdl).
FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /out/gateway /usr/local/bin/gateway
COPY config/gateway.yaml /etc/gateway/gateway.yaml
# 65532 is distroless's nonroot user; the volume must be writable by it.
COPY --from=build --chown=65532:65532 /out/var/lib/gateway /var/lib/gateway
ENV GATEWAY_CONFIG=/etc/gateway/gateway.yaml
# Bun's fetch holds upstream calls beyond 256 in flight in a queue unless this is raised at start-up.
ENV BUN_CONFIG_MAX_HTTP_REQUESTS=65535
WORKDIR /var/lib/gateway
VOLUME ["/var/lib/gateway"]
USER nonroot
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/gateway"]
# The port is the config's server.port (8080 in the shipped one) or $PORT.
CMD ["serve", "--host", "0.0.0.0"]
