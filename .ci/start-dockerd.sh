#!/usr/bin/env bash
# Start a private Docker engine for the container tests and wait until it answers.
# Usage: start-dockerd.sh STATE_DIR ; prints the DOCKER_HOST value on stdout.
#
# The engine runs with its data, exec root, socket and pidfile all under STATE_DIR, so it
# never touches a system engine. No image registry is reachable here and there is no bridge
# network, hence --bridge=none --iptables=false; builds and runs use --network host.
# Stop it with: kill "$(cat STATE_DIR/dockerd.pid)".
set -euo pipefail

state=${1:?usage: start-dockerd.sh STATE_DIR}
mkdir -p "$state/data" "$state/exec"
socket="$state/docker.sock"
pidfile="$state/dockerd.pid"
log="$state/dockerd.log"

if [[ -f "$pidfile" ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
    echo "unix://$socket"
    exit 0
fi

# setsid: the engine outlives this helper, and the caller stops it by its PID.
setsid dockerd \
    --data-root "$state/data" \
    --exec-root "$state/exec" \
    --host "unix://$socket" \
    --pidfile "$pidfile" \
    --storage-driver overlay2 \
    --bridge=none \
    --iptables=false \
    </dev/null >"$log" 2>&1 &

# Bounded wait: 60 tries of 0.5 s. It is usually ready in under a second.
for _ in $(seq 60); do
    if DOCKER_HOST="unix://$socket" docker version >/dev/null 2>&1; then
        echo "unix://$socket"
        exit 0
    fi
    sleep 0.5
done
echo "dockerd did not answer within 30 s; its log:" >&2
tail -n 50 "$log" >&2
exit 1
