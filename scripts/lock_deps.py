"""Regenerate requirements.lock, the hash-locked runtime dependencies the action's image installs.

    python scripts/lock_deps.py             # rewrite requirements.lock (keeps the current pins)
    python scripts/lock_deps.py --upgrade   # the newest versions pyproject.toml's ranges allow
    python scripts/lock_deps.py --check     # exit 1 if requirements.lock is not what uv resolves

The lock is resolved by uv (`uv pip compile --generate-hashes`) from pyproject.toml's
`[project] dependencies` for the image's interpreter, CPython 3.12 on x86_64 Linux, without
needing that interpreter here. uv writes the hashes of every file of each pinned version (all
wheels and the sdist), so the same lock installs on the test stand-in's Python 3.11 too. What
could still differ between the two is the set of packages, through environment markers: the
lock is therefore also resolved for 3.11, and a difference is an error, not a silent gap.
This needs the package index; tests/test_lock.py checks the lock against pyproject.toml offline.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
LOCK = REPO_ROOT / "requirements.lock"
PYTHON_VERSION = "3.12"
ALSO_INSTALLS_ON = "3.11"
PLATFORM = "x86_64-unknown-linux-gnu"
COMMAND = "python scripts/lock_deps.py"
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)", re.MULTILINE)


def uv_command() -> list[str]:
    """uv beside this Python's scripts (the dev extras pin it), else from PATH."""
    beside = Path(sysconfig.get_path("scripts")) / "uv"
    if beside.is_file():
        return [str(beside)]
    found = shutil.which("uv")
    if found is None:
        raise SystemExit("uv is not installed: pip install -e '.[dev]'")
    return [found]


def compile_lock(out: Path, python_version: str, *, hashes: bool, upgrade: bool) -> None:
    """Resolve pyproject.toml's runtime dependencies for `python_version` into `out`."""
    command = [
        *uv_command(),
        "pip",
        "compile",
        "pyproject.toml",
        "--python-version",
        python_version,
        "--python-platform",
        PLATFORM,
        "--custom-compile-command",
        COMMAND,
        # The system's trust store: machines behind a TLS-inspecting proxy need its CA.
        "--native-tls",
        "--quiet",
        "--output-file",
        str(out),
    ]
    if hashes:
        command.append("--generate-hashes")
    if upgrade:
        command.append("--upgrade")
    subprocess.run(command, cwd=REPO_ROOT, check=True, timeout=300)  # noqa: S603 - fixed argv


def pins(text: str) -> dict[str, str]:
    """The `name==version` lines of a requirements file, by normalised name."""
    return {re.sub(r"[-_.]+", "-", name).lower(): version for name, version in PIN.findall(text)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="only report whether it is stale")
    mode.add_argument("--upgrade", action="store_true", help="move every pin to the newest")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        fresh = Path(tmp) / "requirements.lock"
        if LOCK.exists():
            # uv keeps the pins of an existing output file unless told to upgrade.
            fresh.write_text(LOCK.read_text(encoding="utf-8"), encoding="utf-8")
        compile_lock(fresh, PYTHON_VERSION, hashes=True, upgrade=args.upgrade)
        other = Path(tmp) / f"py{ALSO_INSTALLS_ON}.txt"
        other.write_text(fresh.read_text(encoding="utf-8"), encoding="utf-8")
        compile_lock(other, ALSO_INSTALLS_ON, hashes=False, upgrade=False)
        locked = fresh.read_text(encoding="utf-8")
        if pins(other.read_text(encoding="utf-8")) != pins(locked):
            print(
                f"error: Python {ALSO_INSTALLS_ON} resolves other packages than {PYTHON_VERSION}"
                " (environment markers); one hash-locked file cannot serve both",
                file=sys.stderr,
            )
            return 1

    current = LOCK.read_text(encoding="utf-8") if LOCK.exists() else ""
    if locked == current:
        print(f"{LOCK.name}: up to date ({len(pins(locked))} packages)")
        return 0
    if args.check:
        print(f"{LOCK.name}: differs from what uv resolves; run {COMMAND}", file=sys.stderr)
        return 1
    LOCK.write_text(locked, encoding="utf-8")
    print(f"{LOCK.name}: written ({len(pins(locked))} packages)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
