#!/usr/bin/env bash
# Build the base act needs: the stand-in (build-standin.sh) plus a layer holding the project's
# runtime dependencies, tagged python:3.12-slim, the name the project's Dockerfile starts FROM.
# act builds the action's image with a plain `docker build` on the engine's default network,
# which reaches no package index (docs/workflows.md, "Under a runner emulator"), so the
# Dockerfile's `pip install` must find every requirement already satisfied.
# Usage: build-act-base.sh   (needs the stand-in image and a reachable DOCKER_HOST; the layer
# itself is built with --network host, where pip reaches the index)
# Always runs the build: Docker's cache makes an unchanged one take about a second, and a
# changed dependency list rebuilds the layer.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
standin=${LATENCY_GATE_BASE_IMAGE:-localhost/latency-gate-base:py3}
tag=python:3.12-slim

context=$(mktemp -d)
trap 'rm -rf "$context"' EXIT
cp "$here/Dockerfile.act-base" "$context/Dockerfile"

# The one place that says which requirements the project's Dockerfile installs: keep it in
# step with the Dockerfile's pip line, which installs the hashed lock file. The exact pinned
# versions must be here already, or the Dockerfile's pip step would try to download (offline).
cp "$repo/requirements.lock" "$context/requirements.txt"

# Proxy variables (if this machine has any) are Docker's predefined build args: they reach the
# RUN step but are not kept in the image.
proxy_args=()
for var in HTTP_PROXY HTTPS_PROXY NO_PROXY http_proxy https_proxy no_proxy; do
    if [[ -n "${!var:-}" ]]; then
        proxy_args+=(--build-arg "$var=${!var}")
    fi
done

log=$(mktemp)
if ! docker build --network host --build-arg "STANDIN=$standin" "${proxy_args[@]}" \
    -t "$tag" "$context" >"$log" 2>&1; then
    tail -n 40 "$log" >&2
    rm -f "$log"
    exit 1
fi
rm -f "$log"
echo "built $tag: $standin with $(grep -cE "^[A-Za-z0-9]" "$context/requirements.txt") locked requirements installed"
