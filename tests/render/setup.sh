#!/usr/bin/env bash
# Installs what tests/test_render_browser.py needs to see a report as a person would:
# Debian's chromium (headless) with fonts that have the chart's block glyphs and GitHub's
# emoji (the verdict's ✅ and ❌), Debian's cmark-gfm
# (GitHub's Markdown, with its extensions), and npm's github-markdown-css and mermaid (the trend
# charts, tests/test_render_trend.py), pinned by package-lock.json, into tests/render/node_modules.
# Run as root on Debian 12; safe to run twice.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

packages=(chromium cmark-gfm fonts-liberation fonts-dejavu-core fonts-noto-color-emoji)
# npm may come with a Node.js that is not Debian's: then it is there already.
command -v npm >/dev/null || packages+=(npm)
missing=()
for pkg in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
if ((${#missing[@]})); then
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

if [[ ! -f "$here/node_modules/github-markdown-css/github-markdown-light.css" ||
      ! -f "$here/node_modules/mermaid/dist/mermaid.min.js" ]]; then
    npm ci --prefix "$here" --no-audit --no-fund --loglevel=error
fi
chromium --version 2>/dev/null || true
