# Multi-stage build: compile TypeScript (and native addons) in a full image, run as a non-root user.
FROM node:20-bookworm AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
COPY bench ./bench
RUN npm run build && npm prune --omit=dev

FROM node:20-bookworm-slim
ENV NODE_ENV=production \
    FERRY_DATA_DIR=/var/lib/ferry/store \
    FERRY_AGENT_DATA_DIR=/var/lib/ferry/agent \
    FERRY_LOG_GLOB=/var/log/app/*.log \
    FERRY_LISTEN=0.0.0.0:8077
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
COPY config ./config
RUN useradd --system --home /var/lib/ferry --shell /usr/sbin/nologin ferry \
 && mkdir -p /var/lib/ferry && chown ferry:ferry /var/lib/ferry
USER ferry
VOLUME ["/var/lib/ferry"]
EXPOSE 8077
# Default: local mode (config/ferry.yaml), tailing /var/log/app/*.log into the embedded service. Inside a
# container the service must leave loopback to be reachable; publish the port deliberately.
# As a sidecar shipping to Axiom: CMD ["agent", "--config", "config/sidecar.yaml"] with AXIOM_TOKEN set.
# --max-semi-space-size=4 caps V8's young generation (src/cli/node-flags.ts: ~15 MiB less resident).
ENTRYPOINT ["node", "--max-semi-space-size=4", "dist/src/cli/main.js"]
CMD ["agent", "--config", "config/ferry.yaml"]
