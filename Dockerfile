# syntax=docker/dockerfile:1
# Context Guardian image: the sidecar, the CLIs and the MCP server in one image (issue 8).
# Build:  docker build -t context-guardian .
# Run:    docker run --read-only --tmpfs /tmp -v cg-data:/data -p 127.0.0.1:8786:8786 context-guardian
# CLI:    docker run --rm -v cg-data:/data context-guardian context-guardian-recall --verify --all

ARG NODE_IMAGE=node:20-bookworm-slim

# ---- build: full dependency tree, compile, then drop dev dependencies ----
FROM ${NODE_IMAGE} AS build
WORKDIR /app
# Lockfile first so the dependency layer is cached across source edits.
COPY package.json package-lock.json .npmrc ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build \
 && npm prune --omit=dev --no-audit --no-fund \
 && chmod 0755 bin/*.js

# ---- runtime: production dependencies, dist and bin only ----
FROM ${NODE_IMAGE} AS runtime
# tini forwards SIGTERM to node so Kubernetes and compose stop the sidecar cleanly (node as PID 1 ignores it).
RUN apt-get update \
 && apt-get install -y --no-install-recommends tini \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 guardian \
 && useradd --system --uid 10001 --gid 10001 --home-dir /nonexistent --no-create-home --shell /usr/sbin/nologin guardian \
 && mkdir -p /data \
 && chown 10001:10001 /data

WORKDIR /app
ENV NODE_ENV=production \
    GUARDIAN_HOST=0.0.0.0 \
    GUARDIAN_PORT=8786 \
    GUARDIAN_DATA_DIR=/data \
    HOME=/tmp

COPY --from=build --chown=root:root /app/package.json /app/package-lock.json ./
COPY --from=build --chown=root:root /app/node_modules ./node_modules
COPY --from=build --chown=root:root /app/dist ./dist
COPY --from=build --chown=root:root /app/bin ./bin

# Every CLI on PATH under its package name, without npm link (which would write into the global prefix).
RUN for f in /app/bin/*.js; do ln -s "$f" "/usr/local/bin/$(basename "$f" .js)"; done

# The archive lives on this volume; everything else stays read-only (CONTRACTS §4).
VOLUME ["/data"]
EXPOSE 8786
USER 10001:10001

# slim has no curl: node itself asks /healthz (liveness only; /readyz is for the orchestrator).
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["node", "-e", "require('http').get({host:'127.0.0.1',port:process.env.GUARDIAN_PORT||8786,path:'/healthz',timeout:4000},r=>process.exit(r.statusCode===200?0:1)).on('error',()=>process.exit(1)).on('timeout',()=>process.exit(1))"]

ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["node", "/app/dist/apps/guardian/src/main.js"]
