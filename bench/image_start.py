"""How long the action takes to reach its first request: built from the Dockerfile vs pulled.

    python bench/image_start.py              # 3 rounds of each (about 3 minutes)
    python bench/image_start.py --rounds 1   # one round of each
    python bench/image_start.py --out DIR    # where image_start.json goes [bench/results]

Needs DOCKER_HOST (a reachable engine), the base image (LATENCY_GATE_BASE_IMAGE, default the
stand-in localhost/latency-gate-base:py3, see tests/container/) and Debian's docker-registry.

A runner gets a Docker action's image at job set-up: `docker build` of the Dockerfile, or
`docker pull` of a `docker://` image; then the step `docker run`s it. Each round, interleaved:
- build: every local copy of the image removed and `docker builder prune -af` (a cold build
  cache, the base image present), then `docker build` as the runner does (plus the base arg);
- pull: every local copy removed, then `docker pull` from a registry on 127.0.0.1 (Debian's
  docker-registry, started here, its storage in a temporary folder), which holds the image
  pushed once before the rounds;
then `docker run` with the runner's flags (workdir, INPUT_*/GITHUB_* variables, the four
mounts) probing bench/refserver.py, which stamps the kernel's receive time of each request.
Per round: get (build or pull), `docker run` start to the first request, and the totals from
the start of the get to the first request and to the container's exit. Medians are printed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))

from run import RefServer  # noqa: E402 - bench/run.py, after the path is set

DEFAULT_BASE = "localhost/latency-gate-base:py3"
REPOSITORY = "latency-gate"
LOCAL_TAG = "localhost/latency-gate-bench:build"
TIMEOUT = 900.0


@dataclass(frozen=True)
class Round:
    """One measured start of the action: how it got its image and when things happened (s)."""

    mode: str
    get_s: float
    run_to_first_request_s: float
    start_to_first_request_s: float
    start_to_exit_s: float
    exit_code: int
    note: str


def docker(*args: str, timeout: float = TIMEOUT, check: bool = True) -> str:
    """`docker ARGS` with the engine from DOCKER_HOST; returns stdout."""
    done = subprocess.run(
        ["docker", *args], capture_output=True, text=True, timeout=timeout, check=False
    )
    if check and done.returncode != 0:
        raise RuntimeError(f"docker {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def registry(workdir: Path) -> Iterator[str]:
    """Debian's docker-registry on 127.0.0.1:PORT, storage under workdir; stopped by PID."""
    executable = shutil.which("docker-registry")
    if executable is None:
        raise SystemExit("docker-registry is missing: bash .ci/setup-registry.sh")
    port = free_port()
    config = workdir / "registry.yml"
    config.write_text(
        "version: 0.1\n"
        "log: {level: warn, accesslog: {disabled: true}}\n"
        f"storage: {{filesystem: {{rootdirectory: {workdir / 'storage'}}}}}\n"
        f"http: {{addr: '127.0.0.1:{port}'}}\n",
        encoding="utf-8",
    )
    with (workdir / "registry.log").open("wb") as log:
        proc = subprocess.Popen([executable, "serve", str(config)], stdout=log, stderr=log)
    try:
        for _ in range(100):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/", timeout=1):
                    break
            except OSError:
                time.sleep(0.1)
        else:
            raise RuntimeError("docker-registry did not answer within 10 s")
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def remove_image(reference: str) -> None:
    """Every local tag of the image `reference` names, and its untagged parents."""
    image_id = docker("image", "inspect", "--format", "{{.Id}}", reference, check=False).strip()
    if image_id:
        docker("image", "rm", "--force", image_id)


def build_args(base: str, tag: str) -> list[str]:
    return [
        "build",
        "--network",
        "host",
        "--build-arg",
        f"BASE_IMAGE={base}",
        "-t",
        tag,
        "-f",
        str(ROOT / "Dockerfile"),
        str(ROOT),
    ]


def run_args(image: str, url: str, workdir: Path) -> list[str]:
    """`docker run` as the runner starts a Docker action on a push event (no API calls)."""
    dirs = {name: workdir / name for name in ("workspace", "file_commands", "workflow", "home")}
    for path in dirs.values():
        path.mkdir(parents=True, exist_ok=True)
    step = uuid.uuid4()
    for name in ("set_output", "step_summary", "set_env", "add_path"):
        (dirs["file_commands"] / f"{name}_{step}").touch()
    (dirs["workflow"] / "event.json").write_text('{"ref": "refs/heads/main"}', encoding="utf-8")
    env = {
        "INPUT_URL": url,
        "INPUT_COMMENT": "never",
        "INPUT_GITHUB-TOKEN": "ghs_unused",
        "HOME": "/github/home",
        "CI": "true",
        "GITHUB_ACTIONS": "true",
        "GITHUB_REPOSITORY": "octo-org/octo-repo",
        "GITHUB_EVENT_NAME": "push",
        "GITHUB_EVENT_PATH": "/github/workflow/event.json",
        "GITHUB_WORKSPACE": "/github/workspace",
        "GITHUB_OUTPUT": f"/github/file_commands/set_output_{step}",
        "GITHUB_STEP_SUMMARY": f"/github/file_commands/step_summary_{step}",
        "GITHUB_ENV": f"/github/file_commands/set_env_{step}",
        "GITHUB_PATH": f"/github/file_commands/add_path_{step}",
        "RUNNER_OS": "Linux",
    }
    args = ["run", "--rm", "--network", "host", "--workdir", "/github/workspace"]
    for name, value in env.items():
        args += ["-e", f"{name}={value}"]
    for name, path in dirs.items():
        args += ["-v", f"{path}:/github/{name}"]
    return [*args, image]


def measure(
    mode: str, get: list[str], image: str, server: RefServer, workdir: Path
) -> tuple[Round, str]:
    """Get the image with `docker GET...`, run it, and time both against the server's stamps."""
    server.truth()  # forget anything earlier
    start = time.time_ns()
    got = subprocess.run(
        ["docker", *get], capture_output=True, text=True, timeout=TIMEOUT, check=False
    )
    if got.returncode != 0:
        raise RuntimeError(f"docker {get[0]} failed:\n{got.stdout}\n{got.stderr}")
    run_start = time.time_ns()
    ran = subprocess.run(
        ["docker", *run_args(image, f"{server.base}/fixed?ms=0", workdir)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    end = time.time_ns()
    records = server.truth()
    if not records:
        raise RuntimeError(f"the action made no request:\n{ran.stdout}\n{ran.stderr}")
    first = records[0]["recv_ns"]
    row = Round(
        mode=mode,
        get_s=(run_start - start) / 1e9,
        run_to_first_request_s=(first - run_start) / 1e9,
        start_to_first_request_s=(first - start) / 1e9,
        start_to_exit_s=(end - start) / 1e9,
        exit_code=ran.returncode,
        note="",
    )
    return row, got.stdout


def layer_sizes(address: str) -> list[int]:
    """Compressed sizes of the pushed image's layers, from the registry's manifest."""
    request = urllib.request.Request(
        f"http://{address}/v2/{REPOSITORY}/manifests/latest",
        headers={"Accept": "application/vnd.docker.distribution.manifest.v2+json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        manifest: dict[str, Any] = json.loads(response.read())
    return [layer["size"] for layer in manifest["layers"]]


def summary(rows: list[Round], mode: str) -> dict[str, float]:
    picked = [row for row in rows if row.mode == mode]
    keys = ("get_s", "run_to_first_request_s", "start_to_first_request_s", "start_to_exit_s")
    return {key: statistics.median(getattr(row, key) for row in picked) for key in keys}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=BENCH / "results")
    args = parser.parse_args(argv)
    base = os.environ.get("LATENCY_GATE_BASE_IMAGE", DEFAULT_BASE)
    docker("image", "inspect", base)  # the base must be there: it is not part of either cost
    base_layers = int(docker("image", "inspect", "--format", "{{len .RootFS.Layers}}", base))

    load_before = os.getloadavg()[0]
    rows: list[Round] = []
    server = RefServer()
    try:
        with tempfile.TemporaryDirectory() as tmp, registry(Path(tmp)) as address:
            pushed = f"{address}/{REPOSITORY}:latest"
            docker(*build_args(base, pushed))
            docker("push", pushed)
            size = int(docker("image", "inspect", "--format", "{{.Size}}", pushed))
            base_size = int(docker("image", "inspect", "--format", "{{.Size}}", base))
            compressed = layer_sizes(address)
            remove_image(pushed)
            for index in range(args.rounds):
                remove_image(LOCAL_TAG)
                docker("builder", "prune", "--all", "--force")
                row, output = measure(
                    "build", build_args(base, LOCAL_TAG), LOCAL_TAG, server, Path(tmp) / "b"
                )
                cached = output.count("Using cache") + output.count("CACHED")
                rows.append(
                    row if not cached else Round(**{**asdict(row), "note": f"{cached} cached"})
                )
                remove_image(LOCAL_TAG)
                row, output = measure("pull", ["pull", pushed], pushed, server, Path(tmp) / "p")
                reused = len(re.findall(r"^[0-9a-f]{12}: Already exists$", output, re.M))
                note = "" if reused == base_layers else f"{reused} layers already there"
                rows.append(Round(**{**asdict(row), "note": note}))
                remove_image(pushed)
                print(f"round {index + 1}: {rows[-2]}\n         {rows[-1]}", flush=True)
    finally:
        server.stop()

    result = {
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "load_1min_before": load_before,
            "load_1min_after": os.getloadavg()[0],
            "docker": docker("version", "--format", "{{.Server.Version}}").strip(),
            "base_image": base,
        },
        "image": {
            "size_bytes": size,
            "base_size_bytes": base_size,
            "added_bytes": size - base_size,
            "compressed_bytes": sum(compressed),
            "compressed_added_bytes": sum(compressed[base_layers:]),
            "layers": len(compressed),
            "base_layers": base_layers,
        },
        "medians": {mode: summary(rows, mode) for mode in ("build", "pull")},
        "rounds": [asdict(row) for row in rows],
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "image_start.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({"image": result["image"], "medians": result["medians"]}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
