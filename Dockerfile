# The latency-gate GitHub Action's image. GitHub's runner builds it with a plain
# `docker build -f Dockerfile .` (no build args), so the default base is the real one; the
# tests pass --build-arg BASE_IMAGE=... to build on a local stand-in (tests/container/).
ARG BASE_IMAGE=python:3.12-slim
FROM ${BASE_IMAGE}

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONPATH=/app

WORKDIR /app

# Dependencies in their own layer, keyed on pyproject.toml alone: editing the code rebuilds
# only the cheap COPY layers below. The list is read with tomllib so it cannot drift from
# pyproject.toml, and the package itself is not installed (it runs from /app via PYTHONPATH).
COPY pyproject.toml /app/
RUN python -c "import tomllib; print(*tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies'], sep=chr(10))" \
        > /tmp/requirements.txt \
    && pip install --no-cache-dir -r /tmp/requirements.txt \
    && rm /tmp/requirements.txt

COPY entrypoint.py /app/
COPY latency_gate/ /app/latency_gate/

# Exec form, no shell: inputs arrive as INPUT_<NAME> with hyphens kept (INPUT_GITHUB-TOKEN),
# and /bin/sh (dash) drops such variables from the environment.
ENTRYPOINT ["python", "/app/entrypoint.py"]
