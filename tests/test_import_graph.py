"""The module import graph is acyclic, and the model imports neither Spark nor the index."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("uncertain_cep", "index", "query")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def runtime_imports(path: Path) -> set[str]:
    """Modules imported when the file runs (imports under ``if TYPE_CHECKING`` excluded)."""
    tree = ast.parse(path.read_text())
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if (isinstance(node, ast.If) and isinstance(node.test, ast.Name)
                and node.test.id == "TYPE_CHECKING"):
            skipped.update(id(n) for n in ast.walk(node))
    out = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
    return out


def graph() -> dict[str, set[str]]:
    files = [p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")]
    names = {module_name(p): p for p in files}
    edges = {}
    for name, path in names.items():
        targets = set()
        for imported in runtime_imports(path):
            # `from a.b import c` may name module a.b.c or attribute c of a.b.
            while imported and imported not in names:
                imported = imported.rpartition(".")[0]
            if imported and imported != name:
                targets.add(imported)
        edges[name] = targets
    return edges


def test_project_modules_import_each_other_without_cycles():
    edges = graph()
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for t in sorted(edges[m]):
            # A package's __init__ importing its own submodules is how packages work.
            if t.startswith(m + "."):
                continue
            if state.get(t) == 1:
                cycle = stack[stack.index(t):] + [t]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if t not in state:
                visit(t)
        stack.pop()
        state[m] = 2

    for m in sorted(edges):
        if m not in state:
            visit(m)


def test_the_model_imports_neither_spark_nor_index_nor_query():
    for path in (ROOT / "uncertain_cep" / "model").rglob("*.py"):
        for imported in runtime_imports(path):
            assert not imported.startswith(("pyspark", "index", "query")), (path, imported)
