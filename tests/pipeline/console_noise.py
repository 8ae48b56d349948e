"""What a quiet Spark run must not print: log4j's ERROR lines and Java stack traces."""

from __future__ import annotations

import re

__all__ = ["NOISE", "noise_lines"]

# What Spark's log4j writes at ERROR, and the frames of a Java stack trace.
NOISE = re.compile(r"\bERROR\b|^\s+at [\w$.]+\(|Exception in thread|Py4JJavaError")


def noise_lines(stderr: str) -> list[str]:
    """The lines of ``stderr`` that are errors or trace frames."""
    return [line for line in stderr.splitlines() if NOISE.search(line)]
