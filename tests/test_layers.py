"""The layers of dpreg: one folder per layer's part, no cycle, no import upwards.

The tree shows the layers: every module lives in a folder (a package) that
:data:`LAYERS` names, except the few of :data:`LOOSE`, and every folder of ``dpreg/`` is
named there. A new module goes into the folder of its layer; a new folder gets a line.

Every module of the package is parsed with ``ast`` (nothing is imported), and every
``import dpreg...`` / ``from dpreg... import ...`` statement counts, at module level or
inside a function. ``from package import name`` is an edge to ``package.name`` when that
is a module, else to ``package``. A package's implicit import of its parents is not an
edge (``dpreg.fits.dpsgd`` does not depend on ``dpreg/__init__.py`` by being in it), nor is
an import under ``if TYPE_CHECKING:`` (for annotations only).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "dpreg"

#: The modules that may sit loose in ``dpreg/``, and why: everything else lives in the
#: folder of its layer.
LOOSE = {
    "__init__": "the package's namespace (dpreg.__all__)",
    "__main__": "python -m dpreg: the command line",
    "_checks": "validators of public inputs, used by every layer",
    "exceptions": "the exception classes, raised by every layer",
    "pickling": "pickle files, read and written by results and streams alike",
}

#: Lowest first. A module may import modules of its own layer or of lower layers only. A
#: name is a folder of ``dpreg/`` and stands for everything below it (``dpreg.fits`` is
#: ``fits/**``), or a module of :data:`LOOSE`; ``"dpreg"`` is ``dpreg/__init__.py``.
LAYERS: list[tuple[str, ...]] = [
    # validators, exception classes and pickle files: import nothing of dpreg but each
    # other
    ("dpreg._checks", "dpreg.exceptions", "dpreg.pickling"),
    # privacy accounting and mechanisms; families and their numba numerics; data sets:
    # arithmetic on arrays and numbers
    ("dpreg.privacy", "dpreg.families", "dpreg.datasets"),
    # statistics of released quantities (pivots, plug-in matrices, iterates) and the
    # design: formulas, declared bounds, the public conditioning and reference design,
    # interval arithmetic
    ("dpreg.inference", "dpreg.design"),
    # pure drivers and numba kernels: arrays in, an output dataclass out
    ("dpreg.engines",),
    # the Results object and what it offers (tests, predictions, margins, saving, tables,
    # plots)
    ("dpreg.results",),
    # one private fit per engine, their shared plan and options, the registry of engines,
    # and the non-private M-estimation (the oracle)
    ("dpreg.fits",),
    # the model (design and objective, fit() through the registry) and the front ends:
    # formulas in, results out; the stream under local DP
    ("dpreg.frontend",),
    # the package's namespace, and what uses the whole of it: studies, audits, the CLI
    ("dpreg", "dpreg.studies", "dpreg.audit", "dpreg.__main__"),
]


def folders(package: Path = PACKAGE) -> set[str]:
    """The folders of ``package`` that hold Python files, as dotted names."""
    return {f"{package.name}.{d.name}" for d in package.iterdir()
            if d.is_dir() and any(d.rglob("*.py"))}


def loose_modules(package: Path = PACKAGE) -> list[str]:
    """The modules directly in ``package`` that :data:`LOOSE` does not allow."""
    return sorted(f"{package.name}.{p.stem}" for p in package.glob("*.py")
                  if p.stem not in LOOSE)


def unlisted_folders(package: Path = PACKAGE,
                     layers: list[tuple[str, ...]] = LAYERS) -> list[str]:
    """The folders of ``package`` that no layer names."""
    named = {name for names in layers for name in names}
    return sorted(folders(package) - named)


def stale_names(package: Path = PACKAGE,
                layers: list[tuple[str, ...]] = LAYERS) -> list[str]:
    """The names of ``layers`` that are neither a folder of ``package``, nor a module of
    :data:`LOOSE` that exists, nor the package itself."""
    exists = folders(package) | {package.name} | {
        f"{package.name}.{stem}" for stem in LOOSE
        if (package / f"{stem}.py").is_file() and stem != "__init__"}
    return sorted(name for names in layers for name in names if name not in exists)


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _runtime_nodes(tree: ast.AST):
    """Every node of ``tree`` except those under ``if TYPE_CHECKING:`` (annotations only:
    never imported at run time)."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            todo.extend(node.orelse)
            continue
        todo.extend(ast.iter_child_nodes(node))


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The dpreg modules that ``name`` imports anywhere in its source."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in _runtime_nodes(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative import
                parts = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in modules else base)
    return {m for m in found if m in modules and m != name}


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """``{module: modules it imports}`` over the dpreg modules under ``package``."""
    modules = _modules() if package == PACKAGE else None
    assert modules is not None
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def layer_of(module: str) -> int:
    """Index in :data:`LAYERS` of the longest name that is ``module`` or its parent."""
    best, level = "", None
    for i, names in enumerate(LAYERS):
        for prefix in names:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > len(best):
                best, level = prefix, i
    if level is None:
        raise AssertionError(f"{module} is in no layer: add it to LAYERS in {__file__}")
    return level


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as a list of modules (first == last), or None."""
    white, grey, black = 0, 1, 2
    colour = dict.fromkeys(graph, white)
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        colour[node] = grey
        stack.append(node)
        for nxt in sorted(graph[node]):
            if colour[nxt] == grey:
                return stack[stack.index(nxt):] + [nxt]
            if colour[nxt] == white:
                cycle = visit(nxt)
                if cycle:
                    return cycle
        stack.pop()
        colour[node] = black
        return None

    for start in sorted(graph):
        if colour[start] == white:
            cycle = visit(start)
            if cycle:
                return cycle
    return None


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Every import from a lower layer into a higher one, as ``"a (i) -> b (j)"``."""
    return [f"{a} (layer {layer_of(a)}) -> {b} (layer {layer_of(b)})"
            for a in sorted(graph) for b in sorted(graph[a]) if layer_of(b) > layer_of(a)]


GRAPH = import_graph()


def test_no_module_sits_loose_in_dpreg():
    assert loose_modules() == [], (
        "move these into the folder of their layer (or justify them in LOOSE)")


def test_every_folder_is_in_a_layer():
    assert unlisted_folders() == [], f"add these folders to LAYERS in {__file__}"


def test_every_name_in_a_layer_is_a_folder_or_an_allowed_module():
    assert stale_names() == []


def test_the_folder_checks_can_fail(tmp_path):
    """A planted loose module, an unlisted folder and a stale name are all found."""
    root = tmp_path / "dpreg"
    (root / "fits").mkdir(parents=True)
    (root / "newlayer" / "sub").mkdir(parents=True)
    (root / "__pycache__").mkdir()
    for path in ("__init__.py", "exceptions.py", "formula.py", "fits/__init__.py",
                 "newlayer/sub/mod.py", "__pycache__/x.pyc"):
        (root / path).write_text("")
    layers = [("dpreg.exceptions", "dpreg.model"), ("dpreg.fits",), ("dpreg",)]
    assert loose_modules(root) == ["dpreg.formula"]
    assert unlisted_folders(root, layers) == ["dpreg.newlayer"]
    assert stale_names(root, layers) == ["dpreg.model"]


def test_every_module_is_in_a_layer():
    for module in GRAPH:
        layer_of(module)


def test_no_import_cycle():
    assert find_cycle(GRAPH) is None, " -> ".join(find_cycle(GRAPH))


def test_networkx_agrees_that_there_is_no_cycle():
    nx = pytest.importorskip("networkx")
    g = nx.DiGraph([(a, b) for a, bs in GRAPH.items() for b in bs])
    assert nx.is_directed_acyclic_graph(g), nx.find_cycle(g)


def test_no_import_from_a_higher_layer():
    assert upward_imports(GRAPH) == []


def test_the_checks_can_fail():
    """A planted upward import and a planted cycle are both found."""
    planted = {k: set(v) for k, v in GRAPH.items()}
    planted["dpreg.engines.dpsgd"].add("dpreg.fits.dpsgd")
    low, high = layer_of("dpreg.engines.dpsgd"), layer_of("dpreg.fits.dpsgd")
    assert low < high
    assert f"dpreg.engines.dpsgd (layer {low}) -> dpreg.fits.dpsgd (layer {high})" \
        in upward_imports(planted)
    cycle = find_cycle(planted)
    assert cycle is not None and cycle[0] == cycle[-1]
    assert {"dpreg.engines.dpsgd", "dpreg.fits.dpsgd"} <= set(cycle)


def test_the_parser_sees_function_level_and_relative_imports(tmp_path):
    source = ("def f():\n    from dpreg.frontend.model import DPRegression\n"
              "from . import common\nimport dpreg.fits.registry\n"
              "if TYPE_CHECKING:\n    from dpreg.frontend.stream import LDPStream\n")
    path = tmp_path / "dpsgd.py"
    path.write_text(source)
    modules = _modules()
    assert _imports("dpreg.fits.dpsgd", path, modules) == {
        "dpreg.frontend.model", "dpreg.fits.common", "dpreg.fits.registry"}
