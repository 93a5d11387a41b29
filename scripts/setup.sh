#!/usr/bin/env bash
# Everything `wave` needs on a fresh Debian/Ubuntu machine: tmux, git and bubblewrap, then a
# virtualenv in .venv with wave and its development tools. Safe to run again; it skips what is
# already there.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=""
command -v tmux >/dev/null 2>&1 || missing="$missing tmux"
command -v git >/dev/null 2>&1 || missing="$missing git"   # isolation: worktree
command -v bwrap >/dev/null 2>&1 || missing="$missing bubblewrap"   # sandbox: bubblewrap
if [ -n "$missing" ]; then
  echo "setup: installing$missing" >&2
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq </dev/null
  # shellcheck disable=SC2086
  $sudo apt-get install -y -qq $missing </dev/null
fi

python="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[dev]' </dev/null
echo "setup: ready (.venv/bin/wave, tmux $(tmux -V | cut -d' ' -f2), $(bwrap --version 2>/dev/null || echo 'no bubblewrap'))" >&2
