# node:20-bookworm-slim made locally (test/deploy/live/engine.sh): no registry is reachable here.
FROM debian:bookworm-slim
COPY node /usr/local/bin/node
COPY npm /usr/local/lib/node_modules/npm
COPY host-ca.crt /usr/local/share/context-guardian/host-ca.crt
RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \
 && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx \
 && groupadd --gid 1000 node \
 && useradd --uid 1000 --gid node --shell /bin/bash --create-home node \
 && node --version && npm --version
# Not /etc/ssl/certs: installing Debian's ca-certificates later would rewrite that bundle without the host's CA.
ENV NODE_EXTRA_CA_CERTS=/usr/local/share/context-guardian/host-ca.crt
CMD ["node"]
