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
# happens about one run in five, whatever the job. Likewise the release of the last
# operation, sent by the client asynchronously, may reach the server after the session
# was stopped (INVALID_HANDLE.SESSION_CLOSED; seen once in CI, 2026-12-07). Only those
# reports, whole, are not noise: (the ERROR line, the cause on the next line).
_DETACHED = (
    (re.compile(r"\bERROR ErrorUtils: Spark Connect RPC error during: "
                r"async-grpc-response-sender\b"), "[INVALID_CURSOR.DISCONNECTED]"),
    (re.compile(r"\bERROR ErrorUtils: Spark Connect RPC error during: releaseExecute\b"),
     "[INVALID_HANDLE.SESSION_CLOSED]"),
)


def noise_lines(stderr: str) -> list[str]:
    """The lines of ``stderr`` that are errors or trace frames."""
    lines = stderr.splitlines()
    found, i = [], 0
    while i < len(lines):
        if i + 1 < len(lines) and any(report.search(lines[i]) and cause in lines[i + 1]
                                      for report, cause in _DETACHED):
            i += 2
            while i < len(lines) and re.match(r"^\s+at [\w$./]+\(", lines[i]):
                i += 1
            continue
        if NOISE.search(lines[i]):
            found.append(lines[i])
        i += 1
    return found
