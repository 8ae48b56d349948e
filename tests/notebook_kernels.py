"""A Jupyter kernel of this environment for the tests that execute notebooks."""

from __future__ import annotations

import json
import sys
from pathlib import Path


def kernelspec(root: Path) -> Path:
    """A ``python3`` kernelspec running this interpreter, in a JUPYTER_PATH directory of its
    own: the kernel must import the project from this environment, whatever kernelspecs
    the user or the system has installed."""
    spec = root / "kernels" / "python3"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (this environment)", "language": "python"}))
    return root
