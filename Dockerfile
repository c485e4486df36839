# Context Guardian image: the sidecar, the CLIs and the MCP server in one image (issue 8).
# Build:  docker build -t context-guardian .
# Run:    docker run -d --read-only --tmpfs /tmp -v cg-data:/data -p 127.0.0.1:8786:8786 context-guardian
# CLI:    docker run --rm -v cg-data:/data context-guardian context-guardian-recall --verify --all
# No "# syntax=" line: it makes BuildKit fetch a frontend image from Docker Hub, which fails offline and
# air-gapped, and nothing here needs a newer frontend than the engine's own (issue 13, defect 1).

ARG NODE_IMAGE=node:20-bookworm-slim

# ---- build: full dependency tree, compile, then drop dev dependencies ----
FROM ${NODE_IMAGE} AS build
WORKDIR /app
# Lockfile first so the dependency layer is cached across source edits.
COPY package.json package-lock.json .npmrc ./
# npm can fail to fetch (TLS, proxy) and still exit 0 ("Exit handler never called!"), and the build then
# fails later with a misleading "tsc: not found": make the install prove itself here (defect 2).
RUN npm ci --no-audit --no-fund \
 && npm ls --depth=0 >/dev/null \
 && test -x node_modules/.bin/tsc \
 || { echo "npm ci did not install the dependencies: check the registry, proxy and CA settings" >&2; exit 1; }
COPY . .
# The runtime needs the sidecar, the CLIs, the MCP server and their libraries; the benchmarks, the demo
# and the stub upstream stay out of the image (defect 5).
RUN npm run build \
 && npm prune --omit=dev --no-audit --no-fund \
 && rm -rf dist/bench dist/apps/demo dist/libs/stub-backend \
 && chmod 0755 bin/*.js

# ---- runtime: production dependencies, dist and bin only ----
FROM ${NODE_IMAGE} AS runtime
# tini forwards SIGTERM to node so Kubernetes and compose stop the sidecar cleanly (node as PID 1 ignores it).
# /data (the archive) and /anchor (chain-head anchors, GUARDIAN_SEAL_ANCHOR_DIR) belong to the runtime
# user, so that named volumes mounted there start out writable by it (defect 3).
RUN apt-get update \
 && apt-get install -y --no-install-recommends tini \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 guardian \
 && useradd --system --uid 10001 --gid 10001 --home-dir /nonexistent --no-create-home --shell /usr/sbin/nologin guardian \
 && mkdir -p /data /anchor \
 && chown 10001:10001 /data /anchor

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

# slim has no curl: node itself asks /healthz (liveness only; /readyz is for the orchestrator). A 5 s
# interval, so that "healthy" and `compose up --wait` come within seconds of the start (defect 4):
# --start-interval would allow a longer steady interval, but Docker Engine before 25 (Debian 12 ships
# 20.10) refuses to build a Dockerfile that uses it. One check is one short node process.
HEALTHCHECK --interval=5s --timeout=4s --start-period=30s --retries=3 \
  CMD ["node", "-e", "require('http').get({host:'127.0.0.1',port:process.env.GUARDIAN_PORT||8786,path:'/healthz',timeout:3000},r=>process.exit(r.statusCode===200?0:1)).on('error',()=>process.exit(1)).on('timeout',()=>process.exit(1))"]

ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["node", "/app/dist/apps/guardian/src/main.js"]
