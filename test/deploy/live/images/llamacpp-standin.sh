#!/bin/sh
# llama-server's command line (as deploy/compose/cpu.yml passes it) -> the stub's: the window from
# --ctx-size, the bind address and port. The GGUF flags name the model it reports; nothing is downloaded.
set -eu
set -- "$@" --
model=stub-model window=4096 host=0.0.0.0 port=8080
while [ "$1" != -- ]; do
  case "$1" in
    --hf-repo) shift 2 ;;
    --hf-file) model=$2; shift 2 ;;
    --ctx-size) window=$2; shift 2 ;;
    --jinja) shift ;;
    --host) host=$2; shift 2 ;;
    --port) port=$2; shift 2 ;;
    *) echo "llama.cpp stand-in: unexpected argument $1" >&2; exit 2 ;;
  esac
done
exec node /app/dist/libs/stub-backend/src/main.js --flavor llamacpp --model "$model" --window "$window" --host "$host" --port "$port"
