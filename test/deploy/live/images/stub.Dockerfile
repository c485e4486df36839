# The vLLM and llama.cpp stand-ins of the live compose check (test/deploy/live/standins.sh): the project's
# stub upstream with the production node_modules of guardian's image (it needs zod and commander), plus
# python3 and curl, which the vllm and llamacpp healthchecks of the compose files run. Not FROM guardian's
# image: its VOLUME and GUARDIAN_* settings are no business of an upstream. The context is made by the
# script: dist/libs/stub-backend and dist/libs/errors from `npm run build`, and the two entry scripts. Targets: vllm, llamacpp.
ARG GUARDIAN_IMAGE=context-guardian
ARG NODE_IMAGE=node:20-bookworm-slim
FROM ${GUARDIAN_IMAGE} AS guardian

FROM ${NODE_IMAGE} AS stub
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 curl tini \
 && rm -rf /var/lib/apt/lists/*
COPY --from=guardian /app/node_modules /app/node_modules
COPY libs /app/dist/libs
COPY vllm-standin.sh llamacpp-standin.sh /usr/local/bin/
USER 10001:10001

FROM stub AS vllm
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/vllm-standin.sh"]

FROM stub AS llamacpp
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/llamacpp-standin.sh"]
