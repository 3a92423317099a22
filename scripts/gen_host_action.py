"""Write host/action.yml, the composite action running latency-gate on the runner, from action.yml.

    python scripts/gen_host_action.py           # rewrite host/action.yml
    python scripts/gen_host_action.py --check   # exit 1 if host/action.yml is out of step

The inputs are action.yml's, copied as written (descriptions, quoted defaults); the outputs are
action.yml's with the `value:` a composite action needs. The steps install the action's own
checkout on the runner and run the Docker image's entrypoint.py with every input passed as an
INPUT_* variable: the runner sets those for a Docker action, never for a composite one.
tests/test_host_action.py checks the file against this script, so the two actions cannot drift.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling module
from _generated import generator_parser, write_generated  # noqa: E402

_ENTRY = re.compile(r"^  (?P<name>[a-z0-9-]+):$")

HEADER = """\
# GENERATED from ../action.yml by scripts/gen_host_action.py: edit action.yml, then run it.
#
# latency-gate on the runner itself, without Docker: the same inputs, outputs, code, summary
# and comment as the Docker action in ../action.yml. It installs the package from this checkout
# of the action into a venv under RUNNER_TEMP, with the runner's python3 (3.11 or newer), and
# runs the image's entrypoint.py there. Unlike the Docker action it reaches the runner's own
# loopback (a model served on 127.0.0.1), starts without an image build, and runs on macOS.
name: latency-gate on the runner
description: >-
  Gate a deploy on the latency users feel, run on the runner itself without Docker: probe an
  HTTP or LLM endpoint (localhost included) and fail the job on a breach.
author: latency-gate developers
branding:
  icon: clock
  color: orange

"""

STEPS = """\
runs:
  using: composite
  steps:
    # The network backend waits on sockets with the event loop's add_reader and sizes its
    # ancillary buffer with socket.CMSG_SPACE; Windows' default (proactor) loop has no
    # add_reader and its socket module no CMSG_SPACE, so the probe cannot run there.
    - name: Refuse Windows
      if: runner.os == 'Windows'
      shell: bash
      run: |
        message="Run it on a Linux or macOS runner; on Linux the Docker action"
        message="$message latency-gate/latency-gate@main works too."
        echo "::error title=latency-gate: Windows runners are not supported::$message"
        exit 2
    - name: Install latency-gate on the runner
      id: install
      shell: bash
      env:
        ACTION_ROOT: ${{ github.action_path }}/..
      run: |
        venv="$RUNNER_TEMP/latency-gate-host"
        if [ ! -x "$venv/bin/python" ]; then
          python3 -m venv "$venv"
        fi
        "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$ACTION_ROOT"
        echo "python=$venv/bin/python" >> "$GITHUB_OUTPUT"
    # -P keeps entrypoint.py's folder off sys.path: the code comes from the venv's install.
    - name: Gate
      id: gate
      shell: bash
      env:
        LATENCY_GATE_PYTHON: ${{ steps.install.outputs.python }}
        LATENCY_GATE_ENTRYPOINT: ${{ github.action_path }}/../entrypoint.py
        # The runner gives a Docker action INPUT_<NAME> with the name's hyphens kept; here they
        # become underscores, which a shell passes on intact and action/inputs.py reads alike.
"""


def env_name(name: str) -> str:
    """The INPUT_* variable the composite action sets for input `name` (hyphens as underscores)."""
    return "INPUT_" + name.upper().replace("-", "_")


def _section(lines: list[str], key: str) -> list[str]:
    """The lines of action.yml's top-level `key:` block, without the trailing blank lines."""
    start = lines.index(f"{key}:")
    end = next(
        (i for i in range(start + 1, len(lines)) if lines[i] and not lines[i][0].isspace()),
        len(lines),
    )
    block = lines[start:end]
    while block and not block[-1].strip():
        block.pop()
    return block


def _entries(block: list[str]) -> list[tuple[str, list[str]]]:
    """A block's entries (two-space indented keys), each with its lines."""
    entries: list[tuple[str, list[str]]] = []
    for line in block[1:]:
        match = _ENTRY.match(line)
        if match:
            entries.append((match["name"], [line]))
        elif entries:
            entries[-1][1].append(line)
        elif line.strip():
            raise ValueError(f"unexpected line before the first entry: {line!r}")
    return entries


def render(action_text: str) -> str:
    """host/action.yml for the Docker action whose action.yml text is `action_text`."""
    lines = action_text.splitlines()
    inputs = _section(lines, "inputs")
    names = [name for name, _ in _entries(inputs)]
    outputs = ["outputs:"]
    for name, entry in _entries(_section(lines, "outputs")):
        outputs += [*entry, f"    value: ${{{{ steps.gate.outputs.{name} }}}}"]
    env = [f"        {env_name(name)}: ${{{{ inputs.{name} }}}}" for name in names]
    run = ['      run: exec "$LATENCY_GATE_PYTHON" -P "$LATENCY_GATE_ENTRYPOINT"']
    body = "\n".join([*inputs, "", *outputs, ""])
    return HEADER + body + "\n" + STEPS + "\n".join([*env, *run]) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = generator_parser(__doc__)
    parser.add_argument("--action", type=Path, default=REPO_ROOT / "action.yml")
    parser.add_argument("--host", type=Path, default=REPO_ROOT / "host" / "action.yml")
    args = parser.parse_args(argv)

    action: Path = args.action
    return write_generated(
        args.host,
        lambda _: render(action.read_text(encoding="utf-8")),
        check=args.check,
        subject=str(args.host),
        source=action.name,
        script=Path(__file__).name,
    )


if __name__ == "__main__":
    raise SystemExit(main())
