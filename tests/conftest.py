"""Shared fixtures: real parts the tests need from the machine (a Docker engine, a real LLM server).

A fixture whose part is missing skips its tests with the reason, so a developer can run the suite
anywhere. CI starts every part in `.ci/run` and sets LATENCY_GATE_REQUIRE_DOCKER=1 and
LATENCY_GATE_REQUIRE_LLM=1: there a missing part fails the tests instead, so a broken setup can
never pass as a run that quietly skipped them.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import httpx
import pytest
from machine_pace import BesideTest

REPO_ROOT = Path(__file__).resolve().parent.parent

# The stand-in for python:3.12-slim, built by tests/container/build-standin.sh.
DEFAULT_BASE_IMAGE = "localhost/latency-gate-base:py3"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
LLM_HEALTH_TIMEOUT = 60.0


def _unavailable(reason: str, require_var: str) -> NoReturn:
    """Skip, or fail when the environment says the part must be there."""
    if os.environ.get(require_var) == "1":
        pytest.fail(f"{reason} ({require_var}=1 says it must be available)", pytrace=False)
    pytest.skip(reason)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def stop_process(process: subprocess.Popen[Any]) -> None:
    """Stop a process the tests started, by its PID: SIGTERM, then SIGKILL after 10 s."""
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


@dataclass(frozen=True)
class DockerEnv:
    """A reachable Docker engine and the base image to build the action's image on."""

    docker: str
    base_image: str
    env: dict[str, str]

    def run(
        self, *args: str, timeout: float = 300.0, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """Run `docker ARGS`, capturing text output; bounded by `timeout` seconds."""
        return subprocess.run(
            [self.docker, *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=check,
        )

    def build_action_image(self, tag: str) -> None:
        """Build the project's Dockerfile on the base image as `tag` (the runner's build, plus
        args); fails the test with docker's output if the build fails."""
        build = self.run(
            "build",
            "--network",
            "host",
            "--build-arg",
            f"BASE_IMAGE={self.base_image}",
            "-t",
            tag,
            "-f",
            str(REPO_ROOT / "Dockerfile"),
            str(REPO_ROOT),
            timeout=600,
            check=False,
        )
        assert build.returncode == 0, f"docker build failed:\n{build.stdout}\n{build.stderr}"


@pytest.fixture(scope="session")
def docker_env() -> DockerEnv:
    """The Docker engine from DOCKER_HOST (or the default socket) with the stand-in base image.

    Skips when there is none (fails under LATENCY_GATE_REQUIRE_DOCKER=1). The base image is
    LATENCY_GATE_BASE_IMAGE, default localhost/latency-gate-base:py3.
    """
    require = "LATENCY_GATE_REQUIRE_DOCKER"
    docker = shutil.which("docker")
    if docker is None:
        _unavailable("no docker client on PATH", require)
    env = dict(os.environ)
    try:
        probe = subprocess.run(
            [docker, "version", "--format", "{{.Server.Version}}"],
            env=env,
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        )
    except subprocess.TimeoutExpired:
        _unavailable("the Docker engine did not answer within 20 s", require)
    if probe.returncode != 0:
        where = env.get("DOCKER_HOST", "the default socket")
        _unavailable(f"no Docker engine reachable at {where}: {probe.stderr.strip()}", require)
    base_image = env.get("LATENCY_GATE_BASE_IMAGE", DEFAULT_BASE_IMAGE)
    found = subprocess.run(
        [docker, "image", "inspect", base_image],
        env=env,
        capture_output=True,
        text=True,
        timeout=20,
        check=False,
    )
    if found.returncode != 0:
        _unavailable(
            f"base image {base_image} is missing: build it with tests/container/build-standin.sh",
            require,
        )
    return DockerEnv(docker=docker, base_image=base_image, env=env)


def llm_model_path() -> Path | None:
    """The GGUF model from LATENCY_GATE_TEST_MODEL, or the one .ci/run caches in the repo."""
    configured = os.environ.get("LATENCY_GATE_TEST_MODEL")
    path = Path(configured) if configured else REPO_ROOT / ".cache" / "models" / MODEL_FILE
    return path if path.is_file() else None


@pytest.fixture(scope="session")
def llama_server() -> Iterator[str]:
    """A real llama.cpp server (PyPI xllamacpp) with SmolLM2-135M on 127.0.0.1; yields its base URL.

    Two slots and two threads, as on CI's two cores: a third concurrent request queues. Serves
    /v1/chat/completions with and without streaming. Skips when xllamacpp or the model is
    missing (fails under LATENCY_GATE_REQUIRE_LLM=1); fetch the model with
    `.ci/fetch-model.sh .cache/models`.
    """
    yield from _serve_llama(n_parallel=2)


@pytest.fixture(scope="module")
def llama_server_one_slot() -> Iterator[str]:
    """The same llama.cpp server with one slot: a second concurrent request queues."""
    yield from _serve_llama(n_parallel=1)


# One thread, not one per core: llama.cpp's threads spin-wait on each other at every step, so
# two of them on two cores that something else also wants (a CPU burner, the runner's other
# jobs) stall (beside `stress-ng --cpu 2`: median call 864 ms, max 33.7 s, against 191 ms
# quiet); one thread is slower on a quiet machine (299 ms) and steady beside the burner
# (223 ms, max 642 ms). docs/testing.md, "The llama.cpp tier beside a burner".
LLAMA_THREADS = 1


def _serve_llama(*, n_parallel: int, n_predict: int = -1) -> Iterator[str]:
    """A llama.cpp server with `n_parallel` slots and LLAMA_THREADS threads, in a process of its
    own (tests/llama_process.py says why); `n_predict` is the answer length in tokens for a
    request that names none (-1: until the model stops or the context is full). Stopped by its
    PID."""
    require = "LATENCY_GATE_REQUIRE_LLM"
    # Only its presence here: the server's process loads it (and the model), not pytest's.
    if importlib.util.find_spec("xllamacpp") is None:
        _unavailable("xllamacpp is not installed (pip install -e '.[llm]')", require)
    model = llm_model_path()
    if model is None:
        _unavailable(
            "no LLM model: set LATENCY_GATE_TEST_MODEL or run .ci/fetch-model.sh .cache/models",
            require,
        )

    port = free_port()
    script = Path(__file__).with_name("llama_process.py")
    arguments = [str(model), str(port), str(n_parallel), str(LLAMA_THREADS), str(n_predict)]
    process = subprocess.Popen(
        [sys.executable, str(script), *arguments],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base_url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(base_url, LLM_HEALTH_TIMEOUT, process)
        yield base_url
    finally:
        stop_process(process)


def _wait_healthy(
    base_url: str, timeout: float, process: subprocess.Popen[Any] | None = None
) -> None:
    """Poll /health until it answers 200, for at most `timeout` seconds (and while `process`,
    the server's, runs)."""
    deadline = time.monotonic() + timeout
    last = "no answer"
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            pytest.fail(f"llama.cpp server at {base_url} exited {process.returncode}")
        try:
            response = httpx.get(f"{base_url}/health", timeout=2.0)
        except httpx.HTTPError as exc:
            last = repr(exc)
        else:
            if response.status_code == 200:
                return
            last = f"HTTP {response.status_code}"
        time.sleep(0.1)
    pytest.fail(f"llama.cpp server at {base_url} not healthy after {timeout:.0f} s: {last}")


# Under pytest-xdist (`-n N --dist loadgroup`, tests/run-all.sh) the tests that share something
# expensive run on one worker, so it is made once: the Docker engine's images and act's set-ups
# (the `docker` and `act` tiers, whose module fixtures build them), the demo run (`demo_run`, a
# session fixture), the llama.cpp servers. Without xdist the marks do nothing.
XDIST_GROUPS = (("docker", "docker"), ("act", "docker"), ("llm", "llm"))


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups in its own hook
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        group = next(
            (name for marker, name in XDIST_GROUPS if item.get_closest_marker(marker)), None
        )
        if group is None and "demo_run" in getattr(item, "fixturenames", ()):
            group = "demo"
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))


_BESIDE = pytest.StashKey[BesideTest]()


def pytest_runtest_setup(item: pytest.Item) -> None:
    if any(item.get_closest_marker(name) is not None for name in ("alone", "slow")):
        item.stash[_BESIDE] = BesideTest()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A test marked `alone` (its assertion rests on the machine's pace) or `slow` (most of them
    time real calls) that fails says what used the cores while it ran, and the threads its
    process still had (tests/machine_pace.py, `BesideTest`), in a section of its report: stop
    48's run beside a burner failed two such tests that 14 runs of each afterwards, beside two
    and five CPU hogs, did not (about 7 ms a test, read at its start)."""
    report = yield
    beside = item.stash.get(_BESIDE, None)
    if call.when == "call" and beside is not None:
        report.sections.append(("what ran beside it", beside.said()))
    return report


@pytest.fixture(autouse=True, scope="session")
def _outside_a_workflow() -> Iterator[None]:
    """Tests run as outside a GitHub workflow and on a plain terminal, also when CI runs them:
    the CLI wraps its output in ::stop-commands:: under GITHUB_ACTIONS=true, and NO_COLOR or
    TERM change what it prints. A test that needs one of them sets it."""
    saved = {name: os.environ.pop(name, None) for name in ("GITHUB_ACTIONS", "NO_COLOR")}
    yield
    for name, value in saved.items():
        if value is not None:
            os.environ[name] = value


TINYPROXY_START_TIMEOUT = 10.0


def start_tinyproxy(tmp_path: Path, extra: str = "") -> Iterator[str]:
    """tinyproxy on 127.0.0.1 with its own config (plus the lines `extra`), in the foreground;
    yields its URL and is stopped by its PID."""
    binary = shutil.which("tinyproxy")
    if binary is None:
        pytest.skip("tinyproxy is not installed (apt-get install tinyproxy; .ci/run does)")
    port = free_port()
    config = tmp_path / "tinyproxy.conf"
    config.write_text(
        f"Port {port}\nListen 127.0.0.1\nTimeout 30\nMaxClients 100\nAllow 127.0.0.1\n"
        f'LogFile "{tmp_path}/tinyproxy.log"\nLogLevel Info\nViaProxyName "gate-test-proxy"\n'
        f'PidFile "{tmp_path}/tinyproxy.pid"\n{extra}'
    )
    process = subprocess.Popen([binary, "-d", "-c", str(config)], stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + TINYPROXY_START_TIMEOUT
        while time.monotonic() < deadline:
            try:
                httpx.get(url, timeout=1.0)
                break
            except httpx.HTTPError:
                time.sleep(0.05)
        else:
            pytest.fail("tinyproxy did not listen within 10 s")
        yield url
    finally:
        stop_process(process)


@dataclass(frozen=True)
class DemoRun:
    """One run of `latency-gate demo`: what it exited with and printed, and its --out folder."""

    exit_code: int
    stdout: str
    stderr: str
    output: str
    out: Path


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> DemoRun:
    """`latency-gate demo --out DIR` run once per test session (35-80 s: three endpoints probed
    by the full gate); every test of the demo's run reads this one (the slow tier)."""
    from click.testing import CliRunner  # here: only the demo tests need the CLI

    from latency_gate import cli

    out = tmp_path_factory.mktemp("demo") / "reports"
    result = CliRunner().invoke(cli.main, ["demo", "--out", str(out)], prog_name="latency-gate")
    return DemoRun(result.exit_code, result.stdout, result.stderr, result.output, out)
