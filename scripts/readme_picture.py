"""Make the README's picture of a job summary (docs/images/job-summary.png) from a real run.

    python scripts/readme_picture.py              # write docs/images/job-summary.png
    python scripts/readme_picture.py --out x.png  # somewhere else

A real run, not a drawing: `latency-gate demo-server` serves the demo's "local" endpoint (an
OpenAI-compatible one that streams) on 127.0.0.1, `latency-gate probe` gates it with the
README's budgets and writes its Markdown report (the job summary's text), and that Markdown is
rendered as github.com renders a job summary (cmark-gfm with GitHub's extensions, GitHub's CSS)
and photographed by headless Chromium: the renderer tests/test_render_browser.py uses
(tests/render/page.py). Only the first screen is kept, as a reader first sees it.

Needs chromium, cmark-gfm and tests/render's npm part (`bash tests/render/setup.sh`). The
numbers are this machine's, so a picture made again differs in its figures, not its shape.
"""

from __future__ import annotations

import argparse
import os
import re
import select
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT / "tests"))  # tests/render, the report renderer of the tests

from render.page import CSS, find_chromium, find_cmark, github_html, screenshot  # noqa: E402

PICTURE = REPO_ROOT / "docs" / "images" / "job-summary.png"
WIDTH = 1000  # the width tests/test_render_browser.py renders at
HEIGHT = 1100  # the first screen and a little more: the verdict, the numbers, where time went
# The README's first workflow's request and budgets (docs/examples/openai-chat.yml).
PROBE_OPTIONS = (
    *("--model", "gpt-4o-mini", "--prompt", "Say hello in five words.", "--stream"),
    *("--max-warm-p95", "3s", "--max-concurrent-p95", "5s", "--max-ttft-p95", "1s"),
    *("--name", "api", "--markdown", "report.md"),
)
START_TIMEOUT = 30.0


@contextmanager
def demo_endpoint() -> Iterator[str]:
    """`latency-gate demo-server` on 127.0.0.1, a free port, as a process of its own; its URL."""
    process = subprocess.Popen(
        [sys.executable, "-m", "latency_gate", "demo-server", "--port", "0", "--duration", "300"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )
    try:
        assert process.stdout is not None
        ready, _, _ = select.select([process.stdout], [], [], START_TIMEOUT)
        line = process.stdout.readline() if ready else ""
        found = re.match(r"serving \S+ at (\S+) ", line)
        if found is None:
            raise RuntimeError(f"the demo endpoint did not start: {line!r}")
        yield found[1]
    finally:
        process.terminate()
        process.wait(timeout=10)


def probe_markdown(url: str, folder: Path) -> str:
    """The Markdown report (the job summary's text) of a real probe of `url`."""
    report = folder / "report.md"
    done = subprocess.run(  # noqa: S603 - our own CLI, run by this interpreter
        [sys.executable, "-m", "latency_gate", "probe", url, *PROBE_OPTIONS],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        # No key of the developer's can reach the picture.
        env={
            **{k: v for k, v in os.environ.items() if not k.startswith("LATENCY_GATE_")},
            "PYTHONPATH": str(REPO_ROOT),
        },
    )
    if done.returncode != 0:
        raise RuntimeError(f"probe exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return report.read_text(encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=PICTURE, help="the PNG to write")
    args = parser.parse_args(argv)
    chromium, cmark = find_chromium(), find_cmark()
    if chromium is None or cmark is None or not CSS.is_file():
        print("needs chromium, cmark-gfm and tests/render's npm part: bash tests/render/setup.sh")
        return 2
    with tempfile.TemporaryDirectory(prefix="lg-picture-") as tmp, demo_endpoint() as url:
        folder = Path(tmp)
        markdown = probe_markdown(url, folder)
        page = folder / "summary.html"
        page.write_text(github_html(cmark, markdown, CSS.read_text(encoding="utf-8")), "utf-8")
        args.out.parent.mkdir(parents=True, exist_ok=True)
        screenshot(chromium, page, args.out, width=WIDTH, height=HEIGHT)
    print(f"wrote {args.out} ({args.out.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
