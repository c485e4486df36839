#!/bin/sh
# vLLM's command line (as docker-compose.yml passes it) -> the stub's: the served model, the window from
# --max-model-len, the bind address and port. Any other flag is an error, so a compose change is noticed.
set -eu
set -- "$@" --
model=stub-model window=8192 host=0.0.0.0 port=8000
while [ "$1" != -- ]; do
  case "$1" in
    --model) model=$2; shift 2 ;;
    --max-model-len) window=$2; shift 2 ;;
    --host) host=$2; shift 2 ;;
    --port) port=$2; shift 2 ;;
    *) echo "vllm stand-in: unexpected argument $1" >&2; exit 2 ;;
  esac
done
exec node /app/dist/libs/stub-backend/src/main.js --flavor vllm --model "$model" --window "$window" --host "$host" --port "$port"
