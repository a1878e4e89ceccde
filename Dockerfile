# idpool service image. `npm ci` installs from the lock file and builds (prepare).
FROM node:20-bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
COPY tsconfig.json ormconfig.ts ./
COPY scripts ./scripts
COPY migrations ./migrations
COPY src ./src
RUN npm ci --no-audit --no-fund && npm prune --omit=dev
ENV IDPOOL_PORT=8080
EXPOSE 8080
CMD ["node", "dist/src/main.js"]
