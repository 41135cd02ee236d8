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
    FERRY_DATA_DIR=/var/lib/ferry \
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
# Inside a container the listener must leave loopback to be reachable; publish the port deliberately.
ENTRYPOINT ["node", "dist/src/cli/main.js"]
CMD ["serve", "--config", "config/ferry.yaml"]
