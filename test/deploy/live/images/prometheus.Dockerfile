# The Prometheus of the live compose check, made locally from Debian's prometheus package (2.42): the
# official image cannot be pulled here. Laid out as the official image is: the binary as entrypoint,
# /prometheus as the data folder, run as nobody.
FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends prometheus \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /prometheus && chown nobody:nogroup /prometheus
WORKDIR /prometheus
USER nobody
EXPOSE 9090
ENTRYPOINT ["/usr/bin/prometheus"]
