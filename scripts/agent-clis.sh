#!/usr/bin/env bash
# The real agent CLIs (codex, claude, opencode) at pinned versions, installed with npm into a
# folder of this checkout (.cache/agent-clis, or $WAVE_AGENT_CLIS_DIR), for the tests and
# benchmarks that run them against ../shared/tools/agent-cli-mock. Prints the folder of their
# commands (put it first on PATH). Safe to run again, and from two processes at once: with the
# pinned versions in place it only prints. Never reads stdin; works as root in a clean container.
#
#   PATH="$(bash scripts/agent-clis.sh):$PATH" codex --version
set -euo pipefail
cd "$(dirname "$0")/.."

CODEX_VERSION=0.171.0    # @openai/codex
CLAUDE_VERSION=2.1.197   # @anthropic-ai/claude-code (2.1.2xx and later ask for node >= 22)
OPENCODE_VERSION=1.18.33 # opencode-ai
pins="@openai/codex@$CODEX_VERSION @anthropic-ai/claude-code@$CLAUDE_VERSION opencode-ai@$OPENCODE_VERSION"

dest="${WAVE_AGENT_CLIS_DIR:-$PWD/.cache/agent-clis}"
stamp="$dest/installed-pins"

say() { echo "agent-clis: $*" >&2; }

# Cheap and free of side effects (running a CLI writes to HOME): the stamp names the pins, and
# the two native binaries that npm's postinstall puts in place are there, not the stubs.
installed() {
  [ "$(cat "$stamp" 2>/dev/null)" = "$pins" ] || return 1
  local exe
  for exe in lib/node_modules/@anthropic-ai/claude-code/bin/claude.exe \
    lib/node_modules/opencode-ai/bin/opencode.exe; do
    [ "$(stat -c %s "$dest/$exe" 2>/dev/null || echo 0)" -gt 10000000 ] || return 1
  done
  [ -x "$dest/bin/codex" ] && [ -x "$dest/bin/claude" ] && [ -x "$dest/bin/opencode" ]
}

if installed; then
  echo "$dest/bin"
  exit 0
fi

if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
  say "installing nodejs and npm"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq </dev/null
  $sudo apt-get install -y -qq nodejs npm </dev/null
fi

mkdir -p "$(dirname "$dest")"
exec 9>"$dest.lock"
flock 9 # a second caller waits here, then finds the work done
if installed; then
  echo "$dest/bin"
  exit 0
fi

# The person's npm settings and cache, read before HOME moves below.
userconfig="$(npm config get userconfig </dev/null)"
cache="$(npm config get cache </dev/null)"
scratch="$(mktemp -d "${TMPDIR:-/tmp}/agent-clis.XXXXXX")"
staging="$dest.staging"
trap 'rm -rf "$scratch" "$staging"' EXIT
rm -rf "$staging"

say "installing $pins into $dest"
started=$SECONDS
# opencode's postinstall runs `opencode --version`, which makes its folders under HOME, the XDG
# folders and /tmp: a throwaway HOME and TMPDIR keep them out of the person's.
env -u XDG_CONFIG_HOME -u XDG_DATA_HOME -u XDG_STATE_HOME -u XDG_CACHE_HOME \
  HOME="$scratch" TMPDIR="$scratch" \
  npm_config_userconfig="$userconfig" npm_config_cache="$cache" \
  npm install --global --prefix "$staging" \
  --include=optional --ignore-scripts=false --engine-strict=false \
  --no-audit --no-fund --no-update-notifier --loglevel=error \
  $pins </dev/null >&2 # (unquoted: one word per package)

# Run each from the staging folder before it replaces the old one.
check() {
  local got
  got="$(HOME="$scratch" TMPDIR="$scratch" XDG_CONFIG_HOME="$scratch" XDG_DATA_HOME="$scratch" \
    XDG_STATE_HOME="$scratch" XDG_CACHE_HOME="$scratch" \
    timeout 60 "$staging/bin/$1" --version </dev/null 2>&1)" || true
  case "$got" in
    *"$2"*) ;;
    *)
      say "$1 --version printed '$got', not $2 (did npm skip the postinstall scripts or the optional packages?)"
      exit 1
      ;;
  esac
}
check codex "$CODEX_VERSION"
check claude "$CLAUDE_VERSION"
check opencode "$OPENCODE_VERSION"

echo "$pins" >"$staging/installed-pins"
rm -rf "$dest"
mv "$staging" "$dest"
say "installed in $((SECONDS - started)) s"
echo "$dest/bin"
