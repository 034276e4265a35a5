"""Structure rules that an import graph cannot see (issue 28).

1. Outside ``dpreg/families/`` no code compares a family's name: what a family can do is
   an attribute of its :class:`~dpreg.families.Family` record (``binary_outcome``,
   ``location``, ``squared_loss``, ``inverse_link``, ...), so a new family is one module
   and one registry line.

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
