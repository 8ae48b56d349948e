"""The package reads bottom-up: each layer imports only the layers below it (and its own
group), the imports form no cycle, and only the pipeline touches Spark.

The layers, bottom to top (issue "One namespace"): errors and the shared query-text
helpers; the data model (and the generators beside it); the index; the two engines, part
A's query evaluation and part B's temporal wing, which never import each other; the Spark
pipeline; the public API, results, reports and the command line. Every import counts here,
those made inside functions or only for type checkers too: a lazy import running upward is
still an upward dependency.
"""

from __future__ import annotations

import ast
import functools
import subprocess
import sys
from pathlib import Path

import pytest
from project_modules import modules

# Bottom to top; each layer is a list of groups, each group a list of module prefixes.
LAYERS: list[list[list[str]]] = [
    [["uncertain_cep.errors", "uncertain_cep.files", "uncertain_cep.grammar",
      "uncertain_cep.input_tables",
      "uncertain_cep.durations", "uncertain_cep.progress", "uncertain_cep.optional",
      "uncertain_cep.kernel_cache", "uncertain_cep.memory_pages"]],
    [["uncertain_cep.model"], ["uncertain_cep.datasets"], ["uncertain_cep.sample"]],
    [["uncertain_cep.index"]],
    [["uncertain_cep.query"], ["uncertain_cep.interval"]],
    [["uncertain_cep.pipeline"]],
    [["uncertain_cep", "uncertain_cep.api", "uncertain_cep.results", "uncertain_cep.report",
      "uncertain_cep.answer_files", "uncertain_cep.answer_streams", "uncertain_cep.sliced_index",
      "uncertain_cep.cli", "uncertain_cep.cli_parser", "uncertain_cep.cli_commands",
      "uncertain_cep.dataset_commands", "uncertain_cep.kernel_build",
      "uncertain_cep.__main__"]],
]
SPARK_LAYER = "uncertain_cep.pipeline"

# The rooms of the query wing, bottom to top (query/__init__.py): a module imports its own
# room and rooms below it. The bare package (the registry, strategies.py) is the top.
QUERY_ROOMS = [
    "uncertain_cep.query.language",
    "uncertain_cep.query.engine.kernels",
    "uncertain_cep.query.evaluation",
    "uncertain_cep.query.plan",
    "uncertain_cep.query.engine",
    "uncertain_cep.query.baselines",
    "uncertain_cep.query",
]


def place(module: str) -> tuple[int, int]:
    """(layer, group) of a module: the entry that is its longest prefix."""
    best: tuple[int, tuple[int, int]] | None = None
    for layer, groups in enumerate(LAYERS):
        for group, prefixes in enumerate(groups):
            for prefix in prefixes:
                if module == prefix or module.startswith(prefix + "."):
                    # The bare facade "uncertain_cep" matches only itself.
                    if prefix == "uncertain_cep" and module != prefix:
                        continue
                    if best is None or len(prefix) > best[0]:
                        best = (len(prefix), (layer, group))
    if best is None:
        raise AssertionError(f"{module} is in no layer: add it to LAYERS in {__file__}")
    return best[1]


def imports(path: Path, own: str) -> set[str]:
    """Every module named by an import in the file (relative imports resolved)."""
    out = set()
    package = own if path.name == "__init__.py" else own.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            out.add(base)
            out.update(f"{base}.{alias.name}" for alias in node.names)
    return out


@functools.cache
def graph() -> dict[str, set[str]]:
    """Project module -> the project modules it imports (a package's own submodules and
    names that are not modules are left out). Parsed once per test process: every module's
    test reads it."""
    known = modules()
    edges: dict[str, set[str]] = {}
    for name, path in known.items():
        targets = set()
        for imported in imports(path, name):
            while imported and imported not in known:
                imported = imported.rpartition(".")[0]
            if imported and imported != name and not imported.startswith(name + "."):
                targets.add(imported)
        edges[name] = targets
    return edges


def test_every_package_folder_is_shipped():
    found = {name for name, path in modules().items() if path.name == "__init__.py"}
    for name, path in modules().items():
        for sub in path.parent.iterdir():
            if path.name == "__init__.py" and (sub / "__init__.py").is_file():
                assert f"{name}.{sub.name}" in found, (
                    f"{sub} is a package missing from [tool.setuptools] packages in "
                    "pyproject.toml")


def test_nothing_outside_the_namespace_ships():
    assert all(name.split(".")[0] == "uncertain_cep" for name in modules())


@pytest.mark.parametrize("module", sorted(modules()))
def test_module_imports_only_layers_below_it_or_its_own_group(module):
    layer, group = place(module)
    for target in sorted(graph()[module]):
        t_layer, t_group = place(target)
        assert t_layer < layer or (t_layer, t_group) == (layer, group), (
            f"{module} (layer {layer}) imports {target} (layer {t_layer}, another group): "
            "an import may only run downward")


# The rooms of the index, bottom to top: building forests, the index in memory (the
# package itself: EventIndex, its node table, statistics, summary), shards (the cut, an
# archive indexed shard by shard, shards read side by side), the index on disk.
INDEX_ROOMS = ["uncertain_cep.index.forests", "uncertain_cep.index", "uncertain_cep.index.shards",
               "uncertain_cep.index.store"]


@pytest.mark.parametrize("module", sorted(m for m in modules()
                                          if m.startswith("uncertain_cep.index")))
def test_an_index_room_imports_only_its_own_room_and_rooms_below(module):
    def room(m: str) -> int:
        fits = [i for i, r in enumerate(INDEX_ROOMS) if m == r or m.startswith(r + ".")]
        return max(fits, key=lambda i: len(INDEX_ROOMS[i]))

    for target in sorted(graph()[module]):
        if target.startswith("uncertain_cep.index"):
            assert room(target) <= room(module), (
                f"{module} ({INDEX_ROOMS[room(module)]}) imports {target} "
                f"({INDEX_ROOMS[room(target)]}), a room above it")


def query_room(module: str) -> int:
    """The position of a query module's room in :data:`QUERY_ROOMS` (longest prefix)."""
    fits = [i for i, room in enumerate(QUERY_ROOMS)
            if module == room or module.startswith(room + ".")]
    return max(fits, key=lambda i: len(QUERY_ROOMS[i]))


@pytest.mark.parametrize("module", sorted(m for m in modules()
                                          if m.startswith("uncertain_cep.query")))
def test_a_query_room_imports_only_its_own_room_and_rooms_below(module):
    room = query_room(module)
    for target in sorted(graph()[module]):
        if target.startswith("uncertain_cep.query"):
            assert query_room(target) <= room, (
                f"{module} ({QUERY_ROOMS[room]}) imports {target} "
                f"({QUERY_ROOMS[query_room(target)]}), a room above it")


def test_every_query_module_is_in_a_room():
    loose = sorted(m for m, path in modules().items()
                   if m.rpartition(".")[0] == "uncertain_cep.query"
                   and path.name != "__init__.py" and m.rpartition(".")[2] != "strategies")
    assert loose == [], f"{loose} lie on the query wing's floor: put them in a room"


def test_no_module_imports_another_modules_private_names():
    # A name a module keeps to itself (a leading underscore) stays there; what siblings
    # share is public in the module that defines it (issue "The query wing as rooms").
    found = []
    for name, path in sorted(modules().items()):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.ImportFrom) and not node.level and node.module
                    and node.module.split(".")[0] == "uncertain_cep" and node.module != name):
                found += [f"{name} imports {node.module}.{alias.name}" for alias in node.names
                          if alias.name.startswith("_") and not alias.name.startswith("__")]
    assert found == []


# Private attributes read from outside their object, and why each is allowed: other
# libraries' protocols without a public name, and the CLI's own mark on a handler.
_PRIVATE_READS_ALLOWED = {
    "_repr_html_": "IPython's display protocol",
    "_jvm": "pyspark's py4j gateway (the JVM class archive records its process id)",
    "_actions": "argparse keeps a parser's arguments there",
    "_SubParsersAction": "argparse's class of subcommands",
    "_uncertain_cep_cli": "the CLI's mark on the logging handler it installs",
    "_CacheLocator": "numba's base class of cache locators (uncertain_cep/kernel_cache.py)",
    "_locator_classes": "numba's list of cache locators, which the package's joins",
    # uncertain_cep/kernel_cache.py loads a kernel's cached forms ahead of its first
    # call, as numba's Dispatcher.compile does on a cache hit (no public way to list
    # them):
    "_cache": "numba's cache of a kernel (Dispatcher._cache)",
    "_load_index": "numba's index of a kernel's cached forms (their argument types)",
    "_index_key": "numba's key of a form in that index (CPU, numba, bytecode)",
    "_destroy": "rtree's handle destructor, disarmed for trees opened in place "
                "(index/store/rtree_files.py: libspatialindex would write their header)",
}


def test_no_module_reads_another_objects_private_attributes():
    # An object's underscored attributes are its own: other code asks through a public
    # method (issue "The query wing as rooms": the engine read ``ctx._started``).
    found = []
    for name, path in sorted(modules().items()):
        tree = ast.parse(path.read_text())
        own = {n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and node.attr.startswith("_")
                    and not node.attr.startswith("__")
                    and node.attr not in _PRIVATE_READS_ALLOWED
                    and not (isinstance(node.value, ast.Name)
                             and node.value.id in {"self", "cls", *own})):
                found.append(f"{name}:{node.lineno} reads {ast.unparse(node)}")
    assert found == []


def test_project_modules_import_each_other_without_cycles():
    edges = graph()
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for t in sorted(edges[m]):
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


def test_only_the_pipeline_imports_spark():
    for name, path in modules().items():
        if name.startswith(SPARK_LAYER):
            continue
        spark = sorted(i for i in imports(path, name) if i.split(".")[0] == "pyspark")
        assert not spark, f"{name} imports {spark}: Spark belongs to {SPARK_LAYER}"


def test_layers_cover_the_namespace():
    for module in modules():
        place(module)


@pytest.mark.parametrize("folder", ["index", "query"])
def test_a_layer_imported_by_its_folder_name_is_refused(folder):
    # As `pytest --doctest-modules query/...` would import it: numba kernels cached under
    # that name failed to load later through the package (ModuleNotFoundError: 'query').
    root = Path(__file__).resolve().parent.parent
    run = subprocess.run([sys.executable, "-c", f"import {folder}"], cwd=root,
                         capture_output=True, text=True)
    assert run.returncode != 0
    assert f"the folder of the package uncertain_cep.{folder}" in run.stderr
