#!/bin/sh
# The official image builds Redis with protected mode off, so that other containers may connect without a
# password; Debian's build keeps it on, so turn it off here, before the caller's own arguments.
set -eu
if [ "${1:-}" = redis-server ]; then
  shift
  set -- redis-server --protected-mode no "$@"
fi
exec "$@"
