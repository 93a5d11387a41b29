#!/usr/bin/env bash
# Everything `wave` needs on a fresh Debian/Ubuntu machine: tmux, then a virtualenv in .venv
# with wave and its development tools. Safe to run again; it skips what is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v tmux >/dev/null 2>&1; then
  echo "setup: installing tmux" >&2
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq </dev/null
  $sudo apt-get install -y -qq tmux </dev/null
fi

python="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[dev]' </dev/null
echo "setup: ready (.venv/bin/wave, tmux $(tmux -V | cut -d' ' -f2))" >&2
