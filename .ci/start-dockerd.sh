#!/usr/bin/env bash
# Start a private Docker engine for the container tests and wait until it answers.
# Usage: start-dockerd.sh STATE_DIR ; prints the DOCKER_HOST value on stdout.
#
# The engine runs with its data, exec root, socket and pidfile all under STATE_DIR, so it
# never touches a system engine. It keeps its default bridge (docker0, 172.17.0.1 unless that
# is taken), because a workflow run by act serves endpoints to the action's container there,
# and act runs that container on the default network. Nothing is routed out of the bridge:
# no iptables rules (no NAT) and no IP forwarding, so a container on it reaches the host's
# bridge address and nothing beyond. The container tests use --network host as before.
# Stop it with: kill "$(cat STATE_DIR/dockerd.pid)"; the caller removes docker0 afterwards
# if it was not there before (dockerd leaves the link behind).
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
    --iptables=false \
    --ip6tables=false \
    --ip-forward=false \
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
