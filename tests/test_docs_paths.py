"""The newcomer's page (docs/start_here.md) names files that exist: a module moved or
renamed must take the page along."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "start_here.md"


def _named_paths() -> list[Path]:
    """Every ``.py`` file and folder the page names in backticks: in a table row,
    relative to the row's folder unless it starts at a top-level folder."""
    paths = []
    for line in PAGE.read_text().splitlines():
        cells = [c.strip() for c in line.split("|")[1:-1]] if line.startswith("|") else []
        folder, text = None, line
        if len(cells) >= 3 and re.fullmatch(r"`[\w/]+/`", cells[1]):
            folder = cells[1].strip("`")
            paths.append(ROOT / folder)
            text = " ".join(cells[2:])
        for name in re.findall(r"`([\w./]+(?:\.py|/))`", text):
            top = name.split("/")[0]
            if folder is None or ((ROOT / top).is_dir() and "/" in name.rstrip("/")):
                paths.append(ROOT / name)
            else:
                paths.append(ROOT / folder / name)
    return paths


def test_every_file_the_newcomers_page_names_exists():
    paths = _named_paths()
    assert len(paths) > 20, "the page's paths were not found: the pattern needs updating"
    missing = [str(p.relative_to(ROOT)) for p in paths if not p.exists()]
    assert not missing, f"docs/start_here.md names files that do not exist: {missing}"
