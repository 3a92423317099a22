#!/usr/bin/env bash
# Build the test-only stand-in base image localhost/latency-gate-base:py3 (see TESTING.md):
#   1. debootstrap --variant=minbase bookworm into CACHE_DIR (kept as a tarball, so a second
#      run on the same machine skips the ~30 s bootstrap);
#   2. docker import it as localhost/bookworm-minbase;
#   3. build Dockerfile.standin on it: python3, pip, CA certificates.
# Usage: build-standin.sh [CACHE_DIR]   (needs root, debootstrap and a reachable DOCKER_HOST)
# Idempotent: an image already present is left alone unless LATENCY_GATE_REBUILD_STANDIN=1.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${1:-"$here/../../.cache/standin"}
mirror=${LATENCY_GATE_DEBIAN_MIRROR:-http://deb.debian.org/debian}
minbase=localhost/bookworm-minbase
tag=localhost/latency-gate-base:py3

if [[ "${LATENCY_GATE_REBUILD_STANDIN:-0}" != 1 ]] && docker image inspect "$tag" >/dev/null 2>&1; then
    echo "stand-in $tag already present"
    exit 0
fi

mkdir -p "$cache"
tarball="$cache/bookworm-minbase.tar"
if [[ ! -s "$tarball" ]]; then
    root=$(mktemp -d "$cache/root.XXXXXX")
    echo "debootstrap bookworm (minbase) from $mirror"
    debootstrap --variant=minbase bookworm "$root" "$mirror" >"$cache/debootstrap.log" 2>&1 || {
        tail -n 30 "$cache/debootstrap.log" >&2
        rm -rf "$root"
        exit 1
    }
    tar -C "$root" -cf "$tarball.partial" .
    mv "$tarball.partial" "$tarball"
    rm -rf "$root"
fi

if ! docker image inspect "$minbase" >/dev/null 2>&1; then
    docker import "$tarball" "$minbase" >/dev/null
fi

context=$(mktemp -d)
trap 'rm -rf "$context"' EXIT
cp "$here/Dockerfile.standin" "$context/Dockerfile"
mkdir -p "$context/certs"
# Only *.crt files are picked up by update-ca-certificates; a machine without a proxy CA
# simply has none to copy.
find /usr/local/share/ca-certificates/ -maxdepth 1 -name '*.crt' -exec cp {} "$context/certs/" \; 2>/dev/null || true

# Proxy variables (if this machine has any) are Docker's predefined build args: they reach the
# RUN steps but are not kept in the image.
proxy_args=()
for var in HTTP_PROXY HTTPS_PROXY NO_PROXY http_proxy https_proxy no_proxy; do
    if [[ -n "${!var:-}" ]]; then
        proxy_args+=(--build-arg "$var=${!var}")
    fi
done

# The build's apt and pip chatter goes to a log, shown only when the build fails.
if ! docker build --network host --build-arg "MINBASE=$minbase" "${proxy_args[@]}" \
    -t "$tag" "$context" >"$cache/build.log" 2>&1; then
    tail -n 40 "$cache/build.log" >&2
    exit 1
fi
echo "built $tag"
