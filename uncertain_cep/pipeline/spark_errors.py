"""How Spark's own failures become the project's errors: one line, never a JVM trace.

A Spark failure (a PySparkException, a captured JVM error, or py4j's) is told apart from
the project's own errors by :func:`is_spark_error`; :func:`spark_failure` turns one into
an :class:`~uncertain_cep.errors.UncertainCepError` naming the job, with the meaningful
first line of Spark's message (:func:`first_line`) and, when a Python worker failed, that
worker's own exception (:func:`worker_exception`) and what to do about it. Reading
failures name the input instead (:func:`~uncertain_cep.pipeline.spark_reader.spark_input_error`).
"""

from __future__ import annotations

import re
import sys

from uncertain_cep.errors import InputError, UncertainCepError

__all__ = ["first_line", "is_spark_error", "spark_failure", "worker_exception"]


def is_spark_error(e: BaseException) -> bool:
    """Whether ``e`` is Spark's (a PySparkException, a captured JVM error, or py4j's)."""
    return type(e).__module__.startswith(("pyspark.", "py4j.")) or any(
        c.__module__.startswith(("pyspark.errors", "py4j.")) for c in type(e).__mro__)


def first_line(e: BaseException) -> str:
    """The meaningful first line of a Spark error: no py4j preamble, no JVM frames."""
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    for ln in lines:
        if ln.startswith("An error occurred while calling"):
            continue
        ln = ln.lstrip(": ").strip()
        # "org.apache.hadoop.fs.UnsupportedFileSystemException: No FileSystem for ..."
        ln = re.sub(r"^([a-z]\w*\.)+[A-Z]\w*(Exception|Error): ", "", ln)
        return re.sub(r"\s*SQLSTATE: \w+\.?$", "", ln)
    return type(e).__name__


# The last line of a Python traceback: the exception's (dotted) name and its message.
_RAISED = re.compile(r"^((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Warning)): ?(.*)$")


def worker_exception(e: BaseException) -> tuple[str, str] | None:
    r"""The exception a Python worker raised, as ``(name, message)``, from the traceback
    Spark passes on in ``e``'s text (or its causes'); None if there is none.

    >>> class Fake(Exception): pass
    >>> worker_exception(Fake("An exception was thrown from the Python worker:\n"
    ...     "Traceback (most recent call last):\n  File \"w.py\", line 1, in f\n"
    ...     "ModuleNotFoundError: No module named 'uncertain_cep'"))
    ('ModuleNotFoundError', "No module named 'uncertain_cep'")
    """
    seen: set[int] = set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        lines = str(e).splitlines()
        if any(ln.startswith("Traceback (most recent call last)") for ln in lines):
            raised = [m for m in (_RAISED.match(ln.lstrip()) for ln in lines) if m]
            if raised:
                return raised[-1].group(1), raised[-1].group(2).strip()
        e = e.__cause__ or e.__context__  # type: ignore[assignment]
    return None


def spark_failure(e: BaseException, what: str) -> UncertainCepError:
    """A Spark job's failure, as one line naming the job (no JVM or py4j traceback) and,
    when a Python worker failed, that worker's own exception and what to do about it."""
    reason = first_line(e)
    raised = worker_exception(e)
    if raised is not None:
        name, message = raised
        if name.startswith("uncertain_cep.errors."):
            # A task's own error message says what is wrong with the data or query.
            reason = f"{name.removeprefix('uncertain_cep.errors.')}: {message}"
        else:
            reason = f"a Python worker raised {name}: {message}"
            if name.endswith(("ModuleNotFoundError", "ImportError")):
                reason += ("; the executors' Python cannot import what the job needs: "
                           "install uncertain-cep (pip install 'uncertain-cep[spark]') "
                           "where the executors run, or point PYSPARK_PYTHON at an "
                           f"interpreter that has it (this one: {sys.executable})")
    if "AnalysisException" in type(e).__name__ or "UNRESOLVED_COLUMN" in reason:
        return InputError(f"{what}: {reason}")
    return UncertainCepError(f"{what} failed in Spark: {reason}")
