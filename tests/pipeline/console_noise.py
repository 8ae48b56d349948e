"""What a quiet Spark run must not print: log4j's ERROR lines and Java stack traces."""

from __future__ import annotations

import re

__all__ = ["NOISE", "noise_lines"]

# What Spark's log4j writes at ERROR, and the frames of a Java stack trace.
NOISE = re.compile(r"\bERROR\b|^\s+at [\w$.]+\(|Exception in thread|Py4JJavaError")

# Spark Connect's server, when the client has already moved on from an operation whose
# results it holds (a reattach, or the release of a finished operation), may find the
# response stream's cursor gone and logs that at ERROR with a trace
# (INVALID_CURSOR.DISCONNECTED), though nothing failed and the client saw every row; it
# happens about one run in five, whatever the job. Only that report, whole, is not noise.
_DETACHED = re.compile(r"\bERROR ErrorUtils: Spark Connect RPC error during: "
                       r"async-grpc-response-sender\b")
_DETACHED_CAUSE = "[INVALID_CURSOR.DISCONNECTED]"


def noise_lines(stderr: str) -> list[str]:
    """The lines of ``stderr`` that are errors or trace frames."""
    lines = stderr.splitlines()
    found, i = [], 0
    while i < len(lines):
        if (_DETACHED.search(lines[i]) and i + 1 < len(lines)
                and _DETACHED_CAUSE in lines[i + 1]):
            i += 2
            while i < len(lines) and re.match(r"^\s+at [\w$.]+\(", lines[i]):
                i += 1
            continue
        if NOISE.search(lines[i]):
            found.append(lines[i])
        i += 1
    return found
