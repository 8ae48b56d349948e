"""Reading a manifest's JSON field by field: :class:`ManifestFields`.

Every record of the manifest (:mod:`uncertain_cep.index.store.manifest_records`) reads its
JSON object through one :class:`ManifestFields`, which checks each field's type as it is
read and names a missing, mistyped or unknown one by its path from the top of the
manifest (``statistics.grid.t0``) in an :class:`~uncertain_cep.errors.IndexFormatError`.

>>> fields = ManifestFields({"events": 3, "name": "x", "extra": 1}, "counts")
>>> fields.integer("events"), fields.text("name")
(3, 'x')
>>> fields.flag("events")
Traceback (most recent call last):
...
uncertain_cep.errors.IndexFormatError: manifest field 'counts.events' must be true or ...
>>> fields.done()
Traceback (most recent call last):
...
uncertain_cep.errors.IndexFormatError: manifest field 'counts.extra' is not part of index ...
"""

from __future__ import annotations

import math
from typing import Any

from uncertain_cep.errors import IndexFormatError
from uncertain_cep.index.store.format_version import FORMAT_VERSION

__all__ = ["ManifestFields"]


class ManifestFields:
    """One JSON object of the manifest, read field by field; every failure names the
    field by its path from the top (``statistics.grid.t0``)."""

    def __init__(self, data: object, path: str = "") -> None:
        if not isinstance(data, dict):
            raise IndexFormatError(f"manifest field {path!r} must be an object, got "
                                   f"{_shown(data)}" if path else
                                   f"the manifest must be a JSON object, got {_shown(data)}")
        self.data: dict[str, Any] = data
        self.path = path
        self.seen: set[str] = set()

    def name(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def raw(self, key: str) -> object:
        self.seen.add(key)
        if key not in self.data:
            raise IndexFormatError(f"manifest field {self.name(key)!r} is missing")
        return self.data[key]

    def fail(self, key: str, wanted: str, value: object) -> IndexFormatError:
        return IndexFormatError(f"manifest field {self.name(key)!r} must be {wanted}, got "
                                f"{_shown(value)}")

    def integer(self, key: str) -> int:
        v = self.raw(key)
        # JSON true/false load as bool, a subclass of int: not a count.
        if not isinstance(v, int) or isinstance(v, bool):
            raise self.fail(key, "an integer", v)
        return v

    def integer_or_none(self, key: str) -> int | None:
        if self.data.get(key, 0) is None:
            self.seen.add(key)
            return None
        return self.integer(key)

    def number(self, key: str) -> float:
        v = self.raw(key)
        if not _is_number(v):
            raise self.fail(key, "a finite number", v)
        return float(v)  # type: ignore[arg-type]

    def flag(self, key: str) -> bool:
        v = self.raw(key)
        if not isinstance(v, bool):
            raise self.fail(key, "true or false", v)
        return v

    def text(self, key: str) -> str:
        v = self.raw(key)
        if not isinstance(v, str):
            raise self.fail(key, "a string", v)
        return v

    def text_or_none(self, key: str) -> str | None:
        if self.data.get(key, "") is None:
            self.seen.add(key)
            return None
        return self.text(key)

    def texts(self, key: str) -> tuple[str, ...]:
        v = self.raw(key)
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise self.fail(key, "a list of strings", v)
        return tuple(v)

    def numbers(self, key: str) -> tuple[float, ...]:
        v = self.raw(key)
        if not isinstance(v, list) or not all(_is_number(x) for x in v):
            raise self.fail(key, "a list of finite numbers", v)
        return tuple(float(x) for x in v)

    def text_map(self, key: str) -> tuple[tuple[str, str], ...]:
        v = self.raw(key)
        if not isinstance(v, dict) or not all(isinstance(x, str) for x in v.values()):
            raise self.fail(key, "an object of strings", v)
        return tuple(v.items())

    def child(self, key: str) -> ManifestFields:
        return ManifestFields(self.raw(key), self.name(key))

    def children(self, key: str) -> list[ManifestFields]:
        """A list of objects, each read field by field (``shards[2].path``)."""
        v = self.raw(key)
        if not isinstance(v, list):
            raise self.fail(key, "a list of objects", v)
        return [ManifestFields(x, f"{self.name(key)}[{i}]") for i, x in enumerate(v)]

    def done(self) -> None:
        """Refuse fields this format version does not have (a round trip would drop them)."""
        extra = sorted(set(self.data) - self.seen)
        if extra:
            raise IndexFormatError(f"manifest field {self.name(extra[0])!r} is not part of "
                                   f"index format version {FORMAT_VERSION}")


def _is_number(v: object) -> bool:
    if isinstance(v, bool):
        return False
    return isinstance(v, int) or (isinstance(v, float) and math.isfinite(v))


def _shown(value: object) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 60 else text[:57] + '...'}"
