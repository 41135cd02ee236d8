# Multi-stage build: compile TypeScript (and native addons) in a full image, run as a non-root user.
#   docker build -t ferry .                          # without GeoIP data
#   docker build -t ferry --build-arg GEOIP=true .   # with geoip-lite's GeoLite2 data (~154 MB more), for
#                                                    # APL's geo_info_from_ip_address()
FROM node:20-bookworm AS build
ARG GEOIP=false
WORKDIR /app
COPY package.json npm-shrinkwrap.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
COPY bench ./bench
# geoip-lite is an optional dependency: without it, geo_info_from_ip_address() answers a clear 400.
RUN npm run build && npm prune --omit=dev \
 && if [ "$GEOIP" != "true" ]; then rm -rf node_modules/geoip-lite; fi

FROM node:20-bookworm-slim
ENV NODE_ENV=production \
    MALLOC_ARENA_MAX=2 \
    UV_USE_IO_URING=0 \
    UV_THREADPOOL_SIZE=16 \
    FERRY_DATA_DIR=/var/lib/ferry/store \
    FERRY_AGENT_DATA_DIR=/var/lib/ferry/agent \
    FERRY_LOG_GLOB=/var/log/app/*.log \
    FERRY_LISTEN=0.0.0.0:8077
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
COPY config ./config
# A fixed UID and GID (10001), so volumes can be prepared for it: chown 10001:10001 on the host.
RUN groupadd --system --gid 10001 ferry \
 && useradd --system --uid 10001 --gid 10001 --home /var/lib/ferry --shell /usr/sbin/nologin ferry \
 && mkdir -p /var/lib/ferry && chown 10001:10001 /var/lib/ferry
# `ferry` on the PATH, for docker exec: ferry tokens create, ferry query, ferry top, ferry health.
RUN ln -s /app/dist/src/cli/main.js /usr/local/bin/ferry
USER 10001:10001
VOLUME ["/var/lib/ferry"]
# 8077: the event service (local mode, serve); 8078: the agent's /metrics, /health, /tap, on loopback
# unless FERRY_AGENT_LISTEN=0.0.0.0:8078.
EXPOSE 8077 8078
# From the health file the running agent or service writes into its data directory (FERRY_AGENT_DATA_DIR,
# FERRY_DATA_DIR) every 5 s: works in every mode, with the agent's API on or off (FERRY_AGENT_API=false).
# Unhealthy when a sink is refused or stopped, the process is gone, or it has not written for 30 s.
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "dist/src/cli/main.js", "health"]
# Default: local mode (config/ferry.yaml), tailing /var/log/app/*.log into the embedded service. Inside a
# container the service must leave loopback to be reachable; publish the port deliberately.
# As a sidecar shipping to Axiom: CMD ["agent", "--config", "config/sidecar.yaml"] with AXIOM_TOKEN set.
# The service alone: CMD ["serve"].
# --max-semi-space-size=2 caps V8's young generation (src/cli/node-flags.ts: ~15 MiB less resident).
ENTRYPOINT ["node", "--max-semi-space-size=2", "dist/src/cli/main.js"]
CMD ["agent", "--config", "config/ferry.yaml"]
