"""Point action.yml's `runs.image` at a prebuilt image, for a release commit (docs/design.md).

    python scripts/pin_action_image.py docker://ghcr.io/OWNER/latency-gate:v1.2.3
    python scripts/pin_action_image.py --check docker://ghcr.io/OWNER/latency-gate:v1.2.3

On main, action.yml says `image: Dockerfile` (the runner builds the image on every use). The
release commit that a version tag points at says `image: docker://...` instead, so users of
that tag pull the image the release workflow built, tested and pushed. Only that one line is
rewritten; the rest of action.yml is left byte for byte. `--check` exits 1 when action.yml
does not name IMAGE (the release workflow runs it before pushing anything).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
# `image:` directly under `runs:`, indented by two spaces as in action.yml.
RUNS_IMAGE = re.compile(r"^(runs:\n(?:  .*\n)*?  image: )(.*)$", re.MULTILINE)
# A registry reference with a tag (GHCR wants lower-case names): docker://host/path:tag
IMAGE = re.compile(r"docker://[a-z0-9.-]+(?::\d+)?(?:/[a-z0-9._-]+)+:[A-Za-z0-9_][A-Za-z0-9_.-]*")


def runs_image(action_yml: str) -> str:
    """The value of `runs.image` in action.yml's text."""
    found = RUNS_IMAGE.search(action_yml)
    if found is None:
        raise ValueError("action.yml has no `image:` under `runs:`")
    return found.group(2).strip().strip("'\"")


def pin_image(action_yml: str, image: str) -> str:
    """action.yml's text with `runs.image` set to `image`, a `docker://` reference with a tag."""
    if IMAGE.fullmatch(image) is None:
        raise ValueError(f"not a lower-case docker://HOST/NAME:TAG reference: {image!r}")
    runs_image(action_yml)  # raises when there is no line to rewrite
    return RUNS_IMAGE.sub(lambda match: f"{match.group(1)}{image}", action_yml, count=1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("image", help="docker://ghcr.io/OWNER/NAME:VERSION")
    parser.add_argument("--check", action="store_true", help="only check that action.yml says so")
    parser.add_argument("--action-yml", type=Path, default=REPO_ROOT / "action.yml")
    args = parser.parse_args(argv)

    path: Path = args.action_yml
    current = path.read_text(encoding="utf-8")
    try:
        pinned = pin_image(current, args.image)
        found = runs_image(current)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.check:
        if found != args.image:
            print(f"{path.name}: runs.image is {found!r}, expected {args.image!r}", file=sys.stderr)
            return 1
        print(f"{path.name}: runs.image is {found}")
        return 0
    path.write_text(pinned, encoding="utf-8")
    print(f"{path.name}: runs.image set to {args.image}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
