"""What every benchmark script writes: its JSON results and its section of
``docs/benchmarks.md``, both atomically (:func:`uncertain_cep.files.atomic_write`).

A section sits between ``<!-- NAME:start ...`` and ``<!-- NAME:end -->`` markers; a rerun
replaces it in place, and a first run appends it under its heading.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from uncertain_cep.files import atomic_write

__all__ = ["replace_section", "write_json"]


def write_json(path: Path, data: Any, **dumps: Any) -> None:
    """``json.dumps(data, **dumps)`` to ``path``, atomically."""
    text = json.dumps(data, **dumps)
    atomic_write(path, lambda tmp: Path(tmp).write_text(text))


def replace_section(doc: Path, name: str, heading: str, section: str) -> None:
    """Put ``section`` (which carries its own markers) in place of the old ``name``
    section of ``doc``, or append it under ``## heading``."""
    text = doc.read_text() if doc.exists() else "# Benchmarks\n\n"
    start, end = f"<!-- {name}:start", f"<!-- {name}:end -->"
    if start in text:
        text = text[:text.index(start)] + section + text[text.index(end) + len(end):]
    else:
        text = text.rstrip() + f"\n\n## {heading}\n\n" + section + "\n"
    atomic_write(doc, lambda tmp: Path(tmp).write_text(text))
