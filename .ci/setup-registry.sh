#!/usr/bin/env bash
# Install Debian's docker-registry (the CNCF distribution registry, 2.8 in bookworm) for
# tests/test_registry.py, which starts its own instance on 127.0.0.1 with a temporary storage
# folder and stops it by PID: the released action is a prebuilt image pulled from a registry,
# and that pull path is tested against a real one. Nothing is started here.
# Usage: setup-registry.sh   (as root; idempotent)
set -euo pipefail

if ! command -v docker-registry >/dev/null 2>&1; then
    apt-get update -q
    # The package ships a system service; with no init running it is not started, and the
    # tests never use its default config (port 5000 on every interface, htpasswd auth).
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends docker-registry
fi
docker-registry --version
