"""Seeing a report as a person would: Markdown to GitHub-styled HTML, then headless Chromium.

- `markdown_to_html`: markdown-it-py (CommonMark with GitHub's tables and strikethrough) inside
  `<article class="markdown-body">`, styled with npm's github-markdown-css (light), inlined.
- `github_html`: the same page from Debian's `cmark-gfm` with GitHub's own extensions (tables,
  strikethrough, the extended autolink, the tag filter) and its alerts (`> [!NOTE]`), as
  github.com renders a job summary or a comment.
- `dump_dom` / `screenshot`: Debian's chromium with the flags from shared/TESTING.md.
- `read_png`: a small PNG decoder (8-bit RGB/RGBA, not interlaced: what Chromium writes), so the
  test needs no imaging library.
- `MERMAID` / `mermaid_script`: npm's `mermaid` (the bundle, loaded from this folder by a
  `<script src>` in the page's head) and a script that draws every ```mermaid block as GitHub
  does, then runs the test's own script once the charts are drawn.

`setup.sh` beside this file installs chromium, cmark-gfm, the CSS and mermaid.
"""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path

from markdown_it import MarkdownIt

HERE = Path(__file__).resolve().parent
CSS = HERE / "node_modules" / "github-markdown-css" / "github-markdown-light.css"
MERMAID = HERE / "node_modules" / "mermaid" / "dist" / "mermaid.min.js"
CHROMIUM_NAMES = ("chromium", "chromium-browser")
BROWSER_TIMEOUT = 60.0


def find_chromium() -> str | None:
    """The chromium executable on PATH, or None."""
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


def markdown_to_html(markdown: str, css: str, script: str = "") -> str:
    """A whole HTML page showing `markdown` the way github.com lays it out."""
    body = MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(markdown)
    return _page(body, css, script)


def mermaid_script(then: str) -> str:
    """A page script that turns each ```mermaid block (cmark-gfm's `<pre><code
    class="language-mermaid">`) into a drawn chart, as GitHub shows it, records how that went in
    `document.body.dataset.mermaid` ("drawn N" or the error), then runs `then`."""
    return (
        "(async () => {\n"
        "  const blocks = [...document.querySelectorAll('pre > code.language-mermaid')];\n"
        "  for (const code of blocks) {\n"
        "    const chart = document.createElement('div');\n"
        "    chart.className = 'mermaid';\n"
        "    chart.textContent = code.textContent;\n"
        "    code.parentElement.replaceWith(chart);\n"
        "  }\n"
        "  try {\n"
        "    mermaid.initialize({startOnLoad: false, theme: 'default'});\n"
        "    await mermaid.run({querySelector: '.mermaid'});\n"
        "    document.body.dataset.mermaid = 'drawn ' + blocks.length;\n"
        "  } catch (error) {\n"
        "    document.body.dataset.mermaid = 'error: ' + error;\n"
        "  }\n"
        f"  {then}\n"
        "})();\n"
    )


CMARK_EXTENSIONS = ("table", "strikethrough", "autolink", "tagfilter")
_ALERT = re.compile(
    r"<blockquote>\n<p>\[!(NOTE|TIP|IMPORTANT|WARNING|CAUTION)\]\n?(.*?)</blockquote>", re.DOTALL
)


def find_cmark() -> str | None:
    """The cmark-gfm executable on PATH, or None."""
    return shutil.which("cmark-gfm")


def github_html(
    cmark: str, markdown: str, css: str, script: str = "", *, head_scripts: tuple[Path, ...] = ()
) -> str:
    """A whole HTML page of `markdown` as github.com renders it: cmark-gfm with GitHub's
    extensions (raw HTML kept, as GitHub keeps <details>), and `> [!NOTE]` as an alert.
    `head_scripts` are loaded first (such as MERMAID), from their files."""
    args = [cmark, "--unsafe"]
    for extension in CMARK_EXTENSIONS:
        args += ["-e", extension]
    done = subprocess.run(
        args, input=markdown.encode(), capture_output=True, timeout=BROWSER_TIMEOUT, check=True
    )
    return _page(_ALERT.sub(_alert, done.stdout.decode()), css, script, head_scripts)


def _alert(match: re.Match[str]) -> str:
    """GitHub's alert for a blockquote that opens with [!KIND] (its first paragraph's marker
    taken out, or that paragraph dropped when the marker was all of it)."""
    kind, rest = match.group(1), match.group(2)
    body = rest.removeprefix("</p>\n") if rest.startswith("</p>") else f"<p>{rest}"
    return (
        f"<div class='markdown-alert markdown-alert-{kind.lower()}'>"
        f"<p class='markdown-alert-title'>{kind.capitalize()}</p>\n{body}</div>"
    )


def _page(body: str, css: str, script: str, head_scripts: tuple[Path, ...] = ()) -> str:
    loaded = "".join(f"<script src='{path.as_uri()}'></script>\n" for path in head_scripts)
    return (
        "<!doctype html>\n<html><head><meta charset='utf-8'>\n"
        f"<style>{css}\n.markdown-body {{ box-sizing: border-box; max-width: 980px; "
        "margin: 0 auto; padding: 45px; }}</style>\n"
        f"{loaded}</head><body>\n<article class='markdown-body'>\n{body}</article>\n"
        f"<script>{script}</script>\n</body></html>\n"
    )


def _flags(profile: str) -> list[str]:
    # shared/TESTING.md, "Seeing a report as a person would".
    return [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        "--virtual-time-budget=15000",
    ]


def _run(chromium: str, args: list[str]) -> subprocess.CompletedProcess[bytes]:
    with tempfile.TemporaryDirectory(prefix="lg-chromium-") as profile:
        return subprocess.run(
            [chromium, *_flags(profile), *args],
            capture_output=True,
            timeout=BROWSER_TIMEOUT,
            check=False,
        )


def dump_dom(chromium: str, page: Path, *, width: int = 1000, height: int = 800) -> str:
    """The page's DOM after its scripts ran, laid out in a width x height window (measure in
    the window a screenshot will use: text wraps, and everything below moves, by width)."""
    done = _run(chromium, ["--dump-dom", f"--window-size={width},{height}", page.as_uri()])
    if done.returncode != 0:
        raise RuntimeError(f"chromium --dump-dom failed: {done.stderr.decode()[-2000:]}")
    return done.stdout.decode()


def screenshot(chromium: str, page: Path, out: Path, *, width: int, height: int) -> None:
    """A PNG of the page in a width x height window."""
    done = _run(chromium, [f"--screenshot={out}", f"--window-size={width},{height}", page.as_uri()])
    if done.returncode != 0 or not out.is_file():
        raise RuntimeError(f"chromium --screenshot failed: {done.stderr.decode()[-2000:]}")


@dataclass(frozen=True)
class Image:
    """Decoded pixels: rows of (r, g, b) tuples."""

    width: int
    height: int
    rows: list[list[tuple[int, int, int]]]


def read_png(path: Path) -> Image:
    """Decode an 8-bit, non-interlaced RGB or RGBA PNG (alpha dropped)."""
    data = path.read_bytes()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path} is not a PNG")
    pos, idat = 8, b""
    width = height = channels = 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        chunk = data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", chunk)
            if depth != 8 or color not in (2, 6) or interlace:
                raise ValueError(f"unsupported PNG: depth {depth}, color type {color}")
            channels = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += chunk
        elif kind == b"IEND":
            break
    raw = zlib.decompress(idat)
    stride = width * channels
    rows: list[list[tuple[int, int, int]]] = []
    previous = bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        filter_type = raw[start]
        line = bytearray(raw[start + 1 : start + 1 + stride])
        _unfilter(filter_type, line, previous, channels)
        rows.append([(line[i], line[i + 1], line[i + 2]) for i in range(0, stride, channels)])
        previous = line
    return Image(width, height, rows)


def _unfilter(kind: int, line: bytearray, previous: bytearray, bpp: int) -> None:
    for i in range(len(line)):
        left = line[i - bpp] if i >= bpp else 0
        up = previous[i]
        corner = previous[i - bpp] if i >= bpp else 0
        if kind == 1:
            line[i] = (line[i] + left) & 0xFF
        elif kind == 2:
            line[i] = (line[i] + up) & 0xFF
        elif kind == 3:
            line[i] = (line[i] + (left + up) // 2) & 0xFF
        elif kind == 4:
            estimate = left + up - corner
            pa, pb, pc = abs(estimate - left), abs(estimate - up), abs(estimate - corner)
            pick = left if pa <= pb and pa <= pc else up if pb <= pc else corner
            line[i] = (line[i] + pick) & 0xFF
        elif kind != 0:
            raise ValueError(f"unknown PNG filter {kind}")
