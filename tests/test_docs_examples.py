"""The documentation's code examples run (issue 28, "Docs go stale").

* Every ``>>>`` example of ``docs/**/*.rst`` runs, one test per page, and its printed
  output is compared (doctest, with ``ELLIPSIS`` and ``NORMALIZE_WHITESPACE`` for every
  example). A page runs in a fresh namespace, in a temporary working directory (the
  examples write ``big.csv``, checkpoints, figures), with matplotlib's Agg backend.
* Examples too slow for CI carry ``# doctest: +SKIP``; each is listed in
  :data:`SKIPPED` with its reason and reported as a skipped test.
* The scripts that pages include (``literalinclude``) run, and the figures that the
  page quotes from their output are checked against it.
* Every shell command a page shows (``python -m dpreg ...``, ``python validation/...``,
  ``python benchmarks/...``, in code blocks or inline) is parsed by its own argument
  parser, which catches a renamed script, subcommand, study or option without running a
  Monte Carlo study. The quick ones (``demo``, ``study list``, the ``fit`` of the
  statsmodels page) also run.
* A Python block that is not a doctest fails :func:`test_python_blocks_are_doctests`, so
  a new example cannot silently escape this file.
"""

from __future__ import annotations

import doctest
import io
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
EXAMPLES = DOCS / "examples"
OPTIONFLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE

#: What a page's examples need besides dpreg's own dependencies: a test extra (skipped
#: when it is not installed) or ``"star"``, the STAR file of ../shared/datasets.
PAGE_NEEDS = {
    "index.rst": ("star",),
    "user_guide/ldp.rst": ("matplotlib",),
    "user_guide/ssp.rst": ("dask", "pyarrow"),
    "user_guide/studies.rst": ("matplotlib",),
}

#: Every example marked ``# doctest: +SKIP`` in the docs: (page, a piece of its source)
#: -> why it does not run in CI. Keep this short: a skipped example can go stale.
SKIPPED = {}


def rst_pages() -> list[str]:
    return sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.rst")
                  if "_build" not in p.parts)


def read_page(page: str) -> str:
    return (DOCS / page).read_text(encoding="utf-8")


# --------------------------------------------------------------------------------------
# the code blocks of a page


_DIRECTIVE = re.compile(r"^(\s*)\.\. (code-block|code|sourcecode|literalinclude)::\s*(.*)$")


def code_blocks(text: str) -> list[dict]:
    """The page's code blocks: ``kind`` ("code-block", "literal" for ``::`` blocks,
    "literalinclude" or "doctest" for a bare ``>>>`` paragraph), ``language``, ``line``
    (1-based) and ``body`` (dedented text; the included file's name for an include)."""
    lines = text.splitlines()
    blocks, i = [], 0
    while i < len(lines):
        line = lines[i]
        match = _DIRECTIVE.match(line)
        literal = (not match and line.rstrip().endswith("::")
                   and not line.lstrip().startswith(".."))
        if line.lstrip().startswith(">>>"):  # a bare doctest block: up to a blank line
            j = i
            while j < len(lines) and lines[j].strip():
                j += 1
            body = lines[i:j]
            blocks.append(dict(kind="doctest", language="pycon", line=i + 1,
                               body="\n".join(s.strip() for s in body)))
            i = j
            continue
        if not (match or literal):
            i += 1
            continue
        indent = len(line) - len(line.lstrip())
        j = i + 1
        options = {}
        while j < len(lines) and re.match(r"^\s+:[\w-]+:", lines[j]):
            key, _, value = lines[j].strip()[1:].partition(":")
            options[key] = value.strip()
            j += 1
        body = []
        while j < len(lines) and (not lines[j].strip()
                                  or len(lines[j]) - len(lines[j].lstrip()) > indent):
            body.append(lines[j])
            j += 1
        while body and not body[-1].strip():
            body.pop()
        while body and not body[0].strip():
            body.pop(0)
        margin = min((len(s) - len(s.lstrip()) for s in body if s.strip()), default=0)
        body = "\n".join(s[margin:] for s in body)
        if match and match.group(2) == "literalinclude":
            blocks.append(dict(kind="literalinclude", language=options.get("language", ""),
                               line=i + 1, body=match.group(3).strip()))
        elif match:
            blocks.append(dict(kind="code-block", language=match.group(3).strip(),
                               line=i + 1, body=body))
        elif body:
            blocks.append(dict(kind="literal", language="", line=i + 1, body=body))
        i = max(j, i + 1)
    return blocks


def looks_like_python(block: dict) -> bool:
    if block["language"] in ("python", "py", "python3", "pycon", "ipython"):
        return True
    if block["kind"] != "literal" or is_shell(block):
        return False
    return bool(re.search(r"^(>>> |import |from \w+ import |\w+ = |print\()|dpreg\.",
                          block["body"], re.M))


def is_shell(block: dict) -> bool:
    if block["language"] in ("console", "bash", "shell", "sh"):
        return True
    first = block["body"].lstrip().splitlines()[0] if block["body"].strip() else ""
    return bool(re.match(r"(\$ )?(python|pip) ", first))


# --------------------------------------------------------------------------------------
# the doctests of each page


def _page_params():
    out = []
    for page in rst_pages():
        if ">>>" not in read_page(page):
            continue
        marks = [pytest.mark.data] if "star" in PAGE_NEEDS.get(page, ()) else []
        out.append(pytest.param(page, marks=marks, id=page))
    return out


@pytest.fixture
def docs_sandbox(tmp_path, monkeypatch):
    """A temporary working directory, docs/examples importable (``from my_study import
    study``, as from the folder that holds it), matplotlib (if any) off screen."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.syspath_prepend(str(EXAMPLES))
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:  # the examples' modules, imported afresh next time
        if str(getattr(sys.modules[name], "__file__", "") or "").startswith(str(EXAMPLES)):
            del sys.modules[name]
    if "matplotlib.pyplot" in sys.modules:
        sys.modules["matplotlib.pyplot"].close("all")


@pytest.mark.parametrize("page", _page_params())
def test_page_examples(page, docs_sandbox, request, monkeypatch):
    for need in PAGE_NEEDS.get(page, ()):
        if need == "star":
            monkeypatch.setenv("DPREG_DATA_DIR", str(request.getfixturevalue("star_dir")))
        else:
            pytest.importorskip(need)
    if "matplotlib" in PAGE_NEEDS.get(page, ()):
        import matplotlib
        matplotlib.use("Agg")
    test = doctest.DocTestParser().get_doctest(
        read_page(page), {"__name__": "__docs__"}, page, str(DOCS / page), 0)
    report = io.StringIO()
    runner = doctest.DocTestRunner(optionflags=OPTIONFLAGS)
    runner.run(test, out=report.write)
    result = runner.summarize(verbose=False)
    assert result.attempted > 0
    assert result.failed == 0, (
        f"{result.failed} of {result.attempted} examples of docs/{page} failed. Fix the "
        f"example, or the text if the output changed on purpose:\n{report.getvalue()}")
