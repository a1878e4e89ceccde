# idpool service image, in two stages.
#
# Build: compilers for better-sqlite3's native module, `npm ci` (which builds
# the TypeScript through `prepare`), then production dependencies only.
FROM node:24-bookworm-slim AS build
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json tsconfig.json ormconfig.ts ./
COPY scripts ./scripts
COPY migrations ./migrations
COPY src ./src
RUN npm ci --no-audit --no-fund && npm prune --omit=dev

# Runtime: the built files and production node_modules only (no compiler),
# run as the image's unprivileged `node` user.
FROM node:24-bookworm-slim
ENV NODE_ENV=production \
    IDPOOL_PORT=8080 \
    IDPOOL_DATABASE_URL=sqlite:/data/idpool.db
WORKDIR /app
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# The embedded default keeps its SQLite file (current_offset, worker leases)
# in a volume, so a new container continues the number line.
RUN mkdir -p /data && chown node:node /data
VOLUME ["/data"]
# The image's `node` user by number (uid and gid 1000), so Kubernetes'
# runAsNonRoot can check it. Nothing is written outside /data and /tmp: the
# container runs with a read-only root file system (tmpfs or an emptyDir on
# /tmp; docker-compose.yml, deploy/kubernetes/).
USER 1000:1000
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.IDPOOL_PORT || 8080) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "dist/src/main.js"]
