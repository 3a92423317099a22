# The latency-gate GitHub Action's image. GitHub's runner builds it with a plain
# `docker build -f Dockerfile .` (no build args), so the default base is the real one; the
# tests pass --build-arg BASE_IMAGE=... to build on a local stand-in (tests/container/).
# The tag floats: a released image is built by .github/workflows/release.yml on the base's
# digest, resolved once at release time and recorded in the image's labels (docs/design.md,
# "Releases"), so the image users pull never changes under them.
ARG BASE_IMAGE=python:3.12-slim
FROM ${BASE_IMAGE}

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONPATH=/app

WORKDIR /app

# Dependencies in their own layer, keyed on the lock alone: editing the code rebuilds only the
# cheap COPY layers below. requirements.lock pins every package, transitive ones included, with
# the hashes of its files (python scripts/lock_deps.py regenerates it from pyproject.toml), so
# two builds of one commit install the same bytes. Wheels only: an sdist would run build code.
# The package itself is not installed (it runs from /app via PYTHONPATH).
COPY requirements.lock /app/
RUN pip install --no-cache-dir --require-hashes --only-binary=:all: -r /app/requirements.lock

COPY entrypoint.py /app/
COPY latency_gate/ /app/latency_gate/

# Exec form, no shell: inputs arrive as INPUT_<NAME> with hyphens kept (INPUT_GITHUB-TOKEN),
# and /bin/sh (dash) drops such variables from the environment.
ENTRYPOINT ["python", "/app/entrypoint.py"]
