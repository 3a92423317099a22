"""The README is a doorway and every workflow it and docs/ show is a whole file that runs.

Issue 39: the README opens with what the tool does, a picture of a job summary and the one
workflow to paste; each workflow shown in README.md or docs/*.md is a file of docs/examples/,
quoted whole (character for character), or says it is a shortened snippet. The workflow files
themselves are checked here for what a pasted file needs (`on:`, `permissions:`, a runner for
every job, a body for an LLM URL, no loopback target behind the Docker action, a ref that
exists); tests/test_merge.py runs actionlint and the workflow schema over them, and
tests/test_act_examples.py runs each under act.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml
from conftest import REPO_ROOT

README = REPO_ROOT / "README.md"
DOCS = [README, *sorted((REPO_ROOT / "docs").glob("*.md"))]
EXAMPLES = {path.name: path for path in sorted((REPO_ROOT / "docs" / "examples").glob("*.yml"))}
# Not a workflow: the targets file the workflows and the CLI read.
TARGETS_EXAMPLE = "latency-targets.yml"
WORKFLOWS = {name: path for name, path in EXAMPLES.items() if name != TARGETS_EXAMPLE}
# How a YAML block that is not a whole file says so, on its first line.
SHORTENED = "# Shortened:"
YAML_BLOCK = re.compile(r"^```ya?ml\n(.*?)^```$", flags=re.MULTILINE | re.DOTALL)
README_MAX_LINES = 350
FIRST_STEP_BY_LINE = 150
PICTURE_MAX_BYTES = 200_000
LOOPBACK = re.compile(r"^https?://(localhost|127\.\d+\.\d+\.\d+|\[::1\]|0\.0\.0\.0)(:\d+)?(/|$)")
LLM_PATHS = ("/chat/completions", "/responses", "/messages")
DOCKER_ACTION = "latency-gate/latency-gate@"  # the host form is latency-gate/latency-gate/host@


def _blocks() -> list[tuple[str, int, str]]:
    """Every fenced YAML block of README.md and docs/*.md: (file, line, text)."""
    found = []
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        for match in YAML_BLOCK.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            found.append((str(path.relative_to(REPO_ROOT)), line, match[1]))
    return found


@pytest.mark.parametrize(("doc", "line", "block"), _blocks(), ids=lambda v: str(v)[:40])
def test_each_yaml_block_is_a_whole_example_or_says_it_is_shortened(
    doc: str, line: int, block: str
) -> None:
    """A YAML block in the docs is a file of docs/examples/ quoted whole, or opens with
    "# Shortened:" (a step or two of a job, which does not run as pasted)."""
    whole = {path.read_text(encoding="utf-8") for path in EXAMPLES.values()}
    assert block in whole or block.startswith(SHORTENED), (
        f"{doc}:{line}: a YAML block that is neither a whole docs/examples/ file nor marked "
        f"'{SHORTENED}'"
    )


def test_every_example_is_shown_or_linked() -> None:
    """Each file of docs/examples/ is quoted or linked from the README or a doc: none is lost."""
    text = "".join(path.read_text(encoding="utf-8") for path in DOCS)
    assert [name for name in EXAMPLES if f"examples/{name}" not in text] == []


def test_readme_is_a_doorway() -> None:
    """README.md is at most 350 lines; its first step of the action is by line 150, in a YAML
    block with on:, model: and prompt:; it shows the picture of a job summary."""
    text = README.read_text(encoding="utf-8")
    lines = text.splitlines()
    assert len(lines) <= README_MAX_LINES
    first_step = next(n for n, line in enumerate(lines, 1) if "uses: latency-gate/" in line)
    assert first_step <= FIRST_STEP_BY_LINE
    block = next(m for m in YAML_BLOCK.finditer(text) if "uses: latency-gate/" in m[1])[1]
    for key in ("\non:", "model:", "prompt:", "api-key: ${{ secrets."):
        assert key in block, key
    picture = re.search(r"!\[[^\]]+\]\((docs/images/[\w.-]+\.png)\)", text)
    assert picture is not None
    assert text.index(picture[0]) < text.index("```yaml")
    assert 0 < (REPO_ROOT / picture[1]).stat().st_size < PICTURE_MAX_BYTES


def test_readme_keeps_the_two_set_up_commands_where_they_belong() -> None:
    """`pip install -e . && latency-gate demo` is under "Try it"; the test command (what
    .ci/run calls) is under "Development", not under "Try it"."""
    sections = re.split(r"^## ", README.read_text(encoding="utf-8"), flags=re.MULTILINE)
    try_it = next(s for s in sections if s.startswith("Try it"))
    development = next(s for s in sections if s.startswith("Development"))
    assert "```sh\npip install -e . && latency-gate demo\n```" in try_it
    assert "tests/run-all.sh" not in try_it
    assert "`bash tests/run-all.sh`" in development


def _workflow(name: str) -> dict[Any, Any]:
    data = yaml.safe_load(WORKFLOWS[name].read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def _gate_steps(workflow: dict[Any, Any]) -> list[dict[str, Any]]:
    return [
        step
        for job in workflow["jobs"].values()
        for step in job.get("steps", [])
        if str(step.get("uses", "")).startswith("latency-gate/latency-gate")
    ]


@pytest.mark.parametrize("name", sorted(WORKFLOWS))
def test_example_workflow_is_a_whole_file(name: str) -> None:
    """Each example workflow has its trigger, its permissions, a runner for every job and a
    step of the action at a ref that exists (@main, not the @v0 no release makes)."""
    workflow = _workflow(name)
    assert "on" in workflow or True in workflow  # YAML 1.1 reads a bare `on` as true
    assert "permissions" in workflow
    assert [job for job, spec in workflow["jobs"].items() if "runs-on" not in spec] == []
    text = WORKFLOWS[name].read_text(encoding="utf-8")
    assert "@v0" not in text
    assert "latency-gate/latency-gate" in text


@pytest.mark.parametrize("name", sorted(WORKFLOWS))
def test_example_llm_url_gets_a_model_and_a_prompt(name: str) -> None:
    """A step that probes an LLM API's path says the model and the prompt (or a body), so it
    is probed with the request it would get, not a bare GET."""
    for step in _gate_steps(_workflow(name)):
        given = step.get("with", {})
        url = str(given.get("url", ""))
        if any(path in url for path in LLM_PATHS):
            assert "body" in given or {"model", "prompt"} <= set(given), (name, url)


def _targets_urls(path: str) -> list[str]:
    """The URLs of a targets file the examples name: .github/latency-targets.yml is the
    example's own copy of docs/examples/latency-targets.yml."""
    assert path == ".github/latency-targets.yml", path
    data = yaml.safe_load(EXAMPLES[TARGETS_EXAMPLE].read_text(encoding="utf-8"))
    return [str(target["url"]) for target in data["targets"]]


@pytest.mark.parametrize("name", sorted(WORKFLOWS))
def test_example_never_puts_a_loopback_target_behind_the_docker_action(name: str) -> None:
    """The Docker action refuses a loopback URL (in its container, 127.0.0.1 is the container):
    an example that probes one uses the host form, latency-gate/latency-gate/host@REF."""
    for step in _gate_steps(_workflow(name)):
        if not str(step["uses"]).startswith(DOCKER_ACTION):
            continue
        given = step.get("with", {})
        urls = [str(given.get("url", ""))]
        if "targets" in given:
            urls += _targets_urls(str(given["targets"]))
        assert [url for url in urls if LOOPBACK.match(url)] == [], name


def test_docs_never_name_the_ref_no_release_makes() -> None:
    """`@v0` appears in the docs only where the ref section says it does not resolve."""
    for path in DOCS:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if "@v0" in line:
                assert "`@v0`" in line, f"{path.relative_to(REPO_ROOT)}:{number}: {line}"
