"""Where the real data sets the tests read live: ``shared/datasets`` beside the repository
(``../shared/datasets`` from its root). Tests that need them take the ``shared`` fixture
(tests/conftest.py), which skips, saying where it looked, when the directory is absent."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "datasets"
DODGERS = SHARED / "dodgers" / "Dodgers.data"
ICU = SHARED / "icu" / "Monitor-Data"
LPA = SHARED / "localization-person-activity" / "ConfLongDemo_JSI.first16486.modified.csv"
