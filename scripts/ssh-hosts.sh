#!/usr/bin/env bash
# SSH hosts for the tests: N real OpenSSH daemons on 127.0.0.1 high ports, each a "host" with a
# workdir of its own, a key made for this run, and an ssh config and known_hosts that name them.
#
#   scripts/ssh-hosts.sh install         # only install OpenSSH's server when missing (as root)
#   scripts/ssh-hosts.sh start DIR [N]   # prints DIR/ssh_config; hosts are host1 .. hostN
#   scripts/ssh-hosts.sh stop DIR        # ends every daemon it started there
#
# Each host's PATH starts with its own bin folder (DIR/hostN/bin), where a test puts the CLIs
# agents there run. Nothing of the person's ~/.ssh is read or written: the client config sets its own identity
# and known_hosts, and StrictHostKeyChecking stays on (the host keys are in known_hosts).
set -euo pipefail

cmd=${1:-}
dir=${2:-}
count=${3:-2}
sshd=/usr/sbin/sshd

install() {  # Debian's openssh-server, its service left unstarted: only our daemons run
  [[ -x $sshd ]] && command -v ssh >/dev/null 2>&1 && return 0
  [[ $(id -u) == 0 ]] || { echo "ssh-hosts: missing sshd: install openssh-server (as root)" >&2; exit 3; }
  echo "ssh-hosts: installing openssh-server openssh-client" >&2
  export DEBIAN_FRONTEND=noninteractive
  local policy=/usr/sbin/policy-rc.d made=0
  [[ -e $policy ]] || { printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod +x "$policy" && made=1; }
  { apt-get install -y -qq --no-install-recommends openssh-server openssh-client </dev/null >&2 \
    || { apt-get update -qq </dev/null >&2 && apt-get install -y -qq --no-install-recommends \
      openssh-server openssh-client </dev/null >&2; }; } || { (( made )) && rm -f "$policy"; exit 3; }
  (( made )) && rm -f "$policy"
  return 0
}

if [[ $cmd == install ]]; then
  install
  exit 0
fi
[[ -n $cmd && -n $dir ]] || { echo "usage: $0 install | start|stop DIR [N]" >&2; exit 2; }

stop() {
  local pidfile
  for pidfile in "$dir"/host*/sshd.pid; do
    [[ -e $pidfile ]] || continue
    kill "$(cat "$pidfile")" 2>/dev/null || true
    rm -f "$pidfile"
  done
}

if [[ $cmd == stop ]]; then
  stop
  exit 0
fi
[[ $cmd == start ]] || { echo "unknown command: $cmd" >&2; exit 2; }

[[ -x $sshd ]] || { echo "ssh-hosts: no $sshd (scripts/ssh-hosts.sh install)" >&2; exit 3; }
mkdir -p "$dir" /run/sshd
chmod 0755 /run/sshd
dir=$(cd "$dir" && pwd)
ssh-keygen -q -t ed25519 -N '' -f "$dir/client_key" -C wave-test <<<y >/dev/null
: > "$dir/known_hosts"
: > "$dir/ssh_config"

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

for ((i = 1; i <= count; i++)); do
  host=$dir/host$i
  mkdir -p "$host/workdir" "$host/bin"
  ssh-keygen -q -t ed25519 -N '' -f "$host/host_key" -C "host$i" <<<y >/dev/null
  cp "$dir/client_key.pub" "$host/authorized_keys"
  chmod 0600 "$host/authorized_keys"
  port=$(free_port)
  cat > "$host/sshd_config" <<EOF
ListenAddress 127.0.0.1
Port $port
HostKey $host/host_key
PidFile $host/sshd.pid
AuthorizedKeysFile $host/authorized_keys
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
StrictModes no
UsePAM no
MaxSessions 100
MaxStartups 100:30:200
LogLevel ERROR
SetEnv WAVE_TEST_HOST=host$i PATH=$host/bin:/usr/local/bin:/usr/bin:/bin
AcceptEnv LANG
Subsystem sftp internal-sftp
EOF
  "$sshd" -f "$host/sshd_config" -E "$host/sshd.log"
  printf '[127.0.0.1]:%s %s\n' "$port" "$(cut -d' ' -f1,2 "$host/host_key.pub")" >> "$dir/known_hosts"
  cat >> "$dir/ssh_config" <<EOF
Host host$i
  HostName 127.0.0.1
  Port $port
  User $(id -un)
  IdentityFile $dir/client_key
  IdentitiesOnly yes
  UserKnownHostsFile $dir/known_hosts
  StrictHostKeyChecking yes
  BatchMode yes
EOF
done
# Each daemon answers before this script ends: a test never meets a port not yet listening.
for ((i = 1; i <= count; i++)); do
  for _ in $(seq 100); do
    ssh -F "$dir/ssh_config" -o ConnectTimeout=2 "host$i" true 2>/dev/null && break
    sleep 0.05
  done
done
echo "$dir/ssh_config"
