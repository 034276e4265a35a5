"""Structure rules that an import graph cannot see (issue 28).

1. Outside ``dpreg/families/`` no code compares a family's name: what a family can do is
   an attribute of its :class:`~dpreg.families.Family` record (``binary_outcome``,
   ``location``, ``squared_loss``, ``inverse_link``, ...), so a new family is one module
   and one registry line.
2. No module reads a private member of another module's object: ``x._name`` with ``x``
   not ``self``/``cls`` and ``_name`` (not a dunder) defined nowhere in the reading module,
   and ``from dpreg.m import _name`` unless ``_name`` is a private module of the
   importer's own package (``dpreg.engines._kernels`` from ``dpreg.engines.dpsgd``).
   What another module needs is public and documented (``results.inference(method)``,
   ``hypothesis.joint_source``, ``DPRegression.from_design``, ...).

Every module is parsed with ``ast`` (nothing is imported).
"""

from __future__ import annotations

import ast
from pathlib import Path

from dpreg.families import FAMILIES

PACKAGE = Path(__file__).resolve().parents[1] / "dpreg"

#: Modules where a family's name is a value of the module's own option, not a family's
#: identity: the simulators draw an outcome of the named law, and the studies' grids and
#: tables are keyed by it.
FAMILY_NAME_ALLOWED = {
    "datasets/simulate.py": "draws the outcome of the named data-generating process",
    "studies/robustness.py": "the study's cells are keyed by family name",
    "studies/replicates.py": "the study's cells are keyed by family name",
    "studies/engine_comparison.py": "filters the study's table by its family column",
}


def _sources(package: Path = PACKAGE):
    for path in sorted(package.rglob("*.py")):
        yield path.relative_to(package).as_posix(), path.read_text()


def _is_family_names(node: ast.AST, names: set[str], constants: dict[str, bool]) -> bool:
    """A string constant that is a family's name, a tuple/list/set of family names, or
    a module-level name bound to such a collection (``which in ("mean", "linear")`` is
    an option's value, not a family)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and node.value in names
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return bool(node.elts) and all(_is_family_names(e, names, constants)
                                       for e in node.elts)
    if isinstance(node, ast.Name):
        return constants.get(node.id, False)
    return False


def family_name_comparisons(source: str, names: set[str] = frozenset(FAMILIES)
                            ) -> list[tuple[int, str]]:
    """``(line, code)`` of each comparison (``==``, ``!=``, ``in``, ``not in``, ``is``)
    with a family's name in ``source``."""
    tree = ast.parse(source)
    constants = {}
    for node in tree.body:  # module-level constants such as ("huber",)
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            constants[node.targets[0].id] = _is_family_names(node.value, names, {})
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(
                _is_family_names(side, names, constants)
                for side in (node.left, *node.comparators)):
            found.append((node.lineno, ast.unparse(node)))
        elif isinstance(node, ast.MatchValue) and _is_family_names(node.value, names, {}):
            found.append((node.lineno, ast.unparse(node.value)))
    return found


def test_no_family_name_compared_outside_families():
    bad = [f"dpreg/{path}:{line}: {code}"
           for path, source in _sources() if not path.startswith("families/")
           and path not in FAMILY_NAME_ALLOWED
           for line, code in family_name_comparisons(source)]
    assert bad == [], "compare a Family attribute, not its name:\n" + "\n".join(bad)


def test_the_family_name_rule_can_fail():
    """The comparisons the old code made are all found."""
    old = '''
BOXED_OFFSET_FAMILIES = ("huber",)
def f(family_obj, obj, results, name):
    a = family_obj.name == "logistic"
    b = results.family_name != "linear"
    c = name in BOXED_OFFSET_FAMILIES
    d = obj.family.name in ("linear", "huber")
    e = "expectile" == name
    g = name in {"logistic"}
    h = name == "mallows"  # not a family
    i = name in ("mean", "linear")  # an option's values
'''
    assert [line for line, _ in family_name_comparisons(old)] == [4, 5, 6, 7, 8, 9]


def test_the_allowed_modules_exist():
    for path in FAMILY_NAME_ALLOWED:
        assert (PACKAGE / path).is_file(), path


#: Private reads that must stay, with the reason.
PRIVATE_ALLOWED_MODULES = {
    "audit/engines.py": "an audit plays the server of a stream: it reads each person's "
                        "release off the path's state (LDPStream._run, LDPPath._theta), "
                        "which is what the mechanism must protect",
}
#: ``object._name`` spellings allowed anywhere.
PRIVATE_ALLOWED_READS = {
    "sys._getframe": "CPython's documented frame access (the caller's namespace)",
}


def _own_names(tree: ast.AST) -> set[str]:
    """Names a module defines: functions, classes, assigned names and attributes
    assigned on ``self``/``cls``."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) \
                and isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
            names.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names


def private_reads(source: str, module: str, package: Path = PACKAGE) -> list[tuple[int, str]]:
    """``(line, code)`` of each read of another module's private member in ``source``,
    the module ``module`` (``"dpreg.results.summary"``)."""
    tree = ast.parse(source)
    own = _own_names(tree)
    own_package = module.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") \
                and not node.attr.startswith("__"):
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                continue
            code = ast.unparse(node)
            if node.attr not in own and code not in PRIVATE_ALLOWED_READS:
                found.append((node.lineno, code))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("dpreg"):
            for alias in node.names:
                if not alias.name.startswith("_") or alias.name.startswith("__"):
                    continue
                sibling = package.parent.joinpath(*node.module.split("."), alias.name + ".py")
                if node.module == own_package and sibling.is_file():
                    continue  # a private module of the importer's own package
                found.append((node.lineno, f"from {node.module} import {alias.name}"))
    return found


def _module_name(path: str) -> str:
    parts = ["dpreg", *Path(path).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_no_private_member_read_across_modules():
    bad = [f"dpreg/{path}:{line}: {code}"
           for path, source in _sources() if path not in PRIVATE_ALLOWED_MODULES
           for line, code in private_reads(source, _module_name(path))]
    assert bad == [], ("make it public (with a numpydoc docstring) or justify it in "
                       "PRIVATE_ALLOWED_*:\n" + "\n".join(bad))


def test_the_private_rule_can_fail():
    """The reads the old code made are all found; a module's own privates, self's and a
    private sibling module are not."""
    old = '''
import sys
from dpreg.hypothesis import _source
from dpreg.privacy.request import _fmt
from dpreg.engines import _kernels
def f(res, results, DPRegression, design):
    a = res._inference(None)
    b = results._cov
    c = res._names
    d = DPRegression._from_design(design)
    e = results._exog_matrix(None)
    g = sys._getframe(1)
    h = self._names
    return _helper(res)._cache
class _Helper:
    def __init__(self):
        self._cache = {}
'''
    lines = sorted(line for line, _ in private_reads(old, "dpreg.margins"))
    assert lines == [3, 4, 5, 7, 8, 9, 10, 11]
    # in dpreg.engines a private module of its own package is not a private read
    lines = sorted(line for line, _ in private_reads(old, "dpreg.engines.dpsgd"))
    assert lines == [3, 4, 7, 8, 9, 10, 11]


def test_the_allowed_private_modules_exist():
    for path in PRIVATE_ALLOWED_MODULES:
        assert (PACKAGE / path).is_file(), path
