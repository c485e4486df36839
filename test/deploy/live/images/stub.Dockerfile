# The vLLM and llama.cpp stand-ins of the live compose check (test/deploy/live/compose.sh): the project's
# stub upstream on guardian's own image (its node and production node_modules), plus python3 and curl,
# which the vllm and llamacpp healthchecks of the compose files run. The context is made by the script:
# dist/libs/stub-backend from `npm run build` and the two entry scripts. Targets: vllm, llamacpp.
ARG GUARDIAN_IMAGE=context-guardian
FROM ${GUARDIAN_IMAGE} AS stub
USER root
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 curl \
 && rm -rf /var/lib/apt/lists/*
COPY stub-backend /app/dist/libs/stub-backend
COPY vllm-standin.sh llamacpp-standin.sh /usr/local/bin/
USER 10001:10001
# The compose files bring their own healthchecks; guardian's (on :8786) means nothing here.
HEALTHCHECK NONE
CMD []

FROM stub AS vllm
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/vllm-standin.sh"]

FROM stub AS llamacpp
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/llamacpp-standin.sh"]
