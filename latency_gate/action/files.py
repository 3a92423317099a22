"""The files the action writes, and only inside the workspace: each checked before the first call,
then the JSON result and the Markdown report, the job summary and the step outputs written. A
file that cannot be written is an ::error naming it, and the others are still written.
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Literal, TextIO

from latency_gate import github
from latency_gate.action.outputs import in_workspace
from latency_gate.config.files import open_output
from latency_gate.errors import ConfigError, InputProblem
from latency_gate.models import RunResult
from latency_gate.report.markdown import render_markdown
from latency_gate.results.json_file import dump_runs

# What the action keeps in the workspace: the rule said when a path leaves it, and an example.
_KEPT: dict[Literal["file", "folder"], tuple[str, str]] = {
    "file": ("the action writes only inside it", "latency/result.json"),
    "folder": ("the action keeps its folders only inside it", ".latency-history"),
}


def _placed_in_workspace(
    name: str, path: Path, workspace: Path, kind: Literal["file", "folder"]
) -> Path | InputProblem:
    """Where `path` (relative to the workspace, or absolute) lands once symbolic links and `..`
    are followed, or why the action may not keep a `kind` there: a control character in its
    name, or a place outside the workspace (or the workspace itself)."""
    rule, example = _KEPT[kind]
    text = str(path)
    controls = [at for at, char in enumerate(text, 1) if unicodedata.category(char) == "Cc"]
    if controls:
        # A line break would start a line of the log the runner reads as a workflow command
        # ("wrote ...") and of the report-path output.
        return InputProblem(
            name,
            f"holds a control character at position {controls[0]} (a line break?); "
            f"give a plain {kind} name",
        )
    root = workspace.resolve()
    try:
        target = (path if path.is_absolute() else workspace / path).resolve()
    except (OSError, RuntimeError) as exc:
        return InputProblem(name, f"cannot resolve {text!r}: {exc}")
    if target == root or not target.is_relative_to(root):
        where = "the workspace itself" if target == root else "outside the workspace"
        return InputProblem(
            name,
            f"{text!r} is {where} ({root}); {rule}: give a path relative to the workspace, "
            f"such as {example}",
        )
    return target


def written_path_problem(name: str, given: str, workspace: Path) -> InputProblem | None:
    """Why the action may not write the file `given` (relative to the workspace, or absolute),
    if so.

    Symbolic links and `..` are followed first: the file must land inside the workspace,
    the one folder the job shares with later steps (and, for the Docker action, the only
    one that outlives its container). A name that ends in "/" names a folder (Path would drop
    the slash and write a file of the folder's name).
    """
    if given.endswith(("/", os.sep)):
        return InputProblem(
            name,
            f"{given!r} ends in '/', which names a folder; name the file to write, such as "
            f"'{given}result.json'",
        )
    path = Path(given)
    target = _placed_in_workspace(name, path, workspace, "file")
    if isinstance(target, InputProblem):
        return target
    if target.is_dir():
        return InputProblem(name, f"{str(path)!r} is a directory; name the file to write")
    if target.exists() and not target.is_file():
        # A FIFO would block the run at its end, a device swallow the result.
        return InputProblem(
            name, f"{str(path)!r} is not a regular file (a FIFO or a device?); name a file"
        )
    return None


def folder_path_problem(name: str, path: Path, workspace: Path) -> InputProblem | None:
    """Why the action may not keep a folder at `path` (relative to the workspace, or absolute),
    if so: like a written file (written_path_problem) it must lie inside the workspace, after
    symbolic links and `..`, and not be the workspace itself; a file there is not a folder.
    It need not exist yet (a first run)."""
    target = _placed_in_workspace(name, path, workspace, "folder")
    if isinstance(target, InputProblem):
        return target
    if target.exists() and not target.is_dir():
        return InputProblem(name, f"{str(path)!r} is a file, not a folder")
    return None


def check_writable(json_path: Path, output_path: Path | None) -> None:
    """ConfigError naming each file the run must write but cannot (checked without writing)."""
    problems = []
    if (reason := _unwritable_file(json_path)) is not None:
        problems.append(InputProblem("json-path", f"cannot write {str(json_path)!r}: {reason}"))
    if output_path is not None and (reason := _unwritable_file(output_path)) is not None:
        problems.append(
            InputProblem("GITHUB_OUTPUT", f"cannot write {str(output_path)!r}: {reason}")
        )
    if problems:
        raise ConfigError(problems)


def _unwritable_file(path: Path) -> str | None:
    """Why `path` (or the folders it would be created in) cannot be written, else None."""
    try:
        return _unwritable_reason(path)
    except OSError as exc:  # a name too long, a loop of links, ...
        return exc.strerror or str(exc)
    except ValueError as exc:  # a NUL byte
        return str(exc)


def _unwritable_reason(path: Path) -> str | None:
    if path.is_dir():
        return "it is a directory"
    if path.is_fifo():  # written at the end of the run: a FIFO nothing reads would block it
        return "it is a FIFO (named pipe), which could block the run"
    if path.exists():
        return None if os.access(path, os.W_OK) else "permission denied"
    folder = path.parent
    while not folder.exists():
        folder = folder.parent
    if not folder.is_dir():
        return f"{str(folder)!r} is a file, not a folder"
    return None if os.access(folder, os.W_OK | os.X_OK) else f"{str(folder)!r} is not writable"


def write_reports(
    results: Sequence[RunResult],
    json_path: Path,
    markdown_path: Path | None,
    workspace: Path,
    out: TextIO,
) -> tuple[list[Path], list[str]]:
    """Write the JSON result, and the Markdown report when there is a path for it.

    Returns the files written, and the inputs naming those that could not be (each told as an
    ::error, so that one file that cannot be written does not cost the others).
    """
    unwritten: list[str] = []
    written: list[Path] = []
    files: list[tuple[Path, Callable[[], str]]] = [(json_path, lambda: dump_runs(results))]
    if markdown_path is not None:
        files.append((markdown_path, lambda: render_markdown(results)))
    for path, render in files:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with open_output(path) as file:
                file.write(render())
            written.append(path)
        except OSError as exc:
            unwritten.append(_unwritten("json-path", path, exc, out))
    if written:
        print(
            f"latency-gate: wrote {', '.join(in_workspace(path, workspace) for path in written)}",
            file=out,
        )
    return written, unwritten


def write_outputs(path: Path, outputs: Mapping[str, str], out: TextIO) -> list[str]:
    """Append the step outputs to GITHUB_OUTPUT; ["GITHUB_OUTPUT"] (and an ::error) if it fails."""
    try:
        _append(path, github.format_outputs(outputs))
    except OSError as exc:
        return [_unwritten("GITHUB_OUTPUT", path, exc, out)]
    return []


def _unwritten(name: str, path: Path, exc: OSError, out: TextIO) -> str:
    reason = exc.strerror or str(exc)
    message = (
        f"{name}: could not write {str(path)!r}: {reason}; the verdict and the other outputs "
        "were written"
    )
    print(github.annotation("error", message, title="latency-gate: output not written"), file=out)
    return name


def _append(path: Path, text: str) -> None:
    """Append to a file the runner reads back (outputs, summary), with Unix line ends, never
    waiting on a FIFO that nothing reads."""
    with open_output(path, append=True) as file:
        file.write(text)


def write_summary(path: Path, markdown: str, out: TextIO) -> None:
    """Append to the job summary; a summary that cannot be written is a warning, not a failure."""
    try:
        existing = path.stat().st_size if path.exists() else 0
        _append(path, github.step_summary_text(markdown, existing))
    except (OSError, ValueError) as exc:
        print(github.annotation("warning", f"could not write the job summary: {exc}"), file=out)
