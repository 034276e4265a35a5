"""The documentation's code examples run (issue 28, "Docs go stale"), the README's too.

* Every ``>>>`` example of ``docs/**/*.rst`` runs, one test per page, and its printed
  output is compared (doctest, with ``ELLIPSIS`` and ``NORMALIZE_WHITESPACE`` for every
  example). A page runs in a fresh namespace, in a temporary working directory (the
  examples write ``big.csv``, checkpoints, figures), with matplotlib's Agg backend.
* The docstring examples of dpreg's modules (the API pages render them) run too.
* Examples that cannot run in CI carry ``# doctest: +SKIP``; each is listed in
  :data:`SKIPPED` with its reason and reported as a skipped test.
* The scripts that pages include (``literalinclude``) run, and the figures that the
  page quotes from their output are checked against it.
* Every shell command a page shows (``python -m dpreg ...``, ``python validation/...``,
  ``python benchmarks/...``, in code blocks or inline) is parsed by its own argument
  parser, which catches a renamed script, subcommand, study or option without running a
  Monte Carlo study. The quick ones (``demo``, ``study list``, the ``fit`` of the
  statsmodels page) also run.
* The README's Python example runs (:func:`test_readme_example_runs`) and its commands
  are parsed like the pages' (:func:`readme_commands`).
* A Python block that is not a doctest fails :func:`test_python_blocks_are_doctests`, so
  a new example cannot silently escape this file.
"""

from __future__ import annotations

import argparse
import contextlib
import doctest
import importlib
import io
import re
import runpy
import shlex
import sys
import warnings
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

#: Every example marked ``# doctest: +SKIP`` in the docs (a page of docs/, or a module of
#: dpreg/ whose docstrings the API pages render): (where, a piece of its source) -> why
#: it does not run in CI. Keep this short: a skipped example can go stale.
SKIPPED = {
    ("user_guide/studies.rst", "ds.run_study(study, reps=200"):
        "the whole dpsgd-fig2 study: 20 cells x 200 replications, about 18 minutes on 2 "
        "cores; the page runs two replications of its n = 500 cells instead",
    ("dpreg/frontend/stream.py", "stream"): "LDPStream's docstring streams 'big.csv', a file it "
        "does not write; user_guide/ldp.rst runs the same code on a file it writes",
    ("dpreg/datasets/star.py", "data"): "load_star's docstring reads a placeholder path; "
        "index.rst loads the STAR file for real",
}


#: Pages the docs build writes (not committed): their commands are the manifest's rerun
#: commands of recorded runs (dpreg.studies.defaults.recorded_runs_page).
BUILT_PAGES = {"studies/recorded_runs.rst"}


def rst_pages() -> list[str]:
    """The pages of docs/ (not a build's output, autosummary's generated stubs or the
    pages the build writes)."""
    return sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.rst")
                  if not {"_build", "generated"} & set(p.parts)
                  and p.relative_to(DOCS).as_posix() not in BUILT_PAGES)


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


#: A line of Python in a literal block: an import, a print, a call assigned, or dpreg.
_PYTHON = re.compile(r"^(>>> |import \w|from [\w.]+ import |print\(|\w+ = [\w.]+\()|dpreg\.\w",
                     re.M)


def looks_like_python(block: dict) -> bool:
    if block["language"] in ("python", "py", "python3", "pycon", "ipython"):
        return True
    if block["kind"] != "literal" or is_shell(block):
        return False
    return bool(_PYTHON.search(block["body"]))


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


@pytest.mark.data
# the README's stream declares no bounds: on 20,000 rows its intercept may not mix in one
# pass, which the fit says (as it would to a reader)
@pytest.mark.filterwarnings("ignore::dpreg.exceptions.ConvergenceWarning")
def test_readme_example_runs(docs_sandbox, star_dir, capsys):
    """The README's Python example runs: with the STAR file at its placeholder path, and a
    ``big.csv`` of the stream's columns written first (the README streams a file of the
    reader's own)."""
    pytest.importorskip("matplotlib")
    import numpy as np
    import pandas as pd

    blocks = re.findall(r"```python\n(.*?)```", (REPO / "README.md").read_text("utf-8"),
                        re.S)
    placeholder = '"path/to/STAR_public_use.csv"'
    assert len(blocks) == 1 and placeholder in blocks[0], "update this test with the README"
    code = blocks[0].replace(placeholder, repr(str(star_dir / "STAR_public_use.csv")))
    rng = np.random.default_rng(0)
    x1, x2 = rng.normal(0, 1, (2, 20_000))
    pd.DataFrame({"y": x1 - 0.5 * x2 + rng.standard_t(3, x1.size), "x1": x1,
                  "x2": x2}).to_csv(docs_sandbox / "big.csv", index=False)
    exec(compile(code, "README.md", "exec"), {"__name__": "__readme__"})
    assert "DP regression results" in capsys.readouterr().out
    assert (docs_sandbox / "trajectory.png").is_file()


def docstring_modules() -> list[str]:
    """dpreg's modules with docstring examples (the API pages render them)."""
    return sorted(p.relative_to(REPO).as_posix() for p in (REPO / "dpreg").rglob("*.py")
                  if ">>>" in p.read_text(encoding="utf-8"))


@pytest.mark.parametrize("path", docstring_modules())
def test_docstring_examples(path, docs_sandbox):
    module = importlib.import_module(path[:-3].replace("/", ".").removesuffix(".__init__"))
    report = io.StringIO()
    runner = doctest.DocTestRunner(optionflags=OPTIONFLAGS)
    tests = [test for test in doctest.DocTestFinder().find(module) if test.examples]
    for test in tests:
        runner.run(test, out=report.write)
    result = runner.summarize(verbose=False)
    assert tests, f"{path} has '>>>' but no docstring examples were found"
    assert result.failed == 0, f"docstring examples of {path} failed:\n{report.getvalue()}"


# --------------------------------------------------------------------------------------
# examples that do not run in CI


def _skipped_examples() -> list[tuple[str, int, str]]:
    """(where, line, source) of every example marked ``# doctest: +SKIP``, in the pages
    and in dpreg's docstrings."""
    sources = {page: read_page(page) for page in rst_pages()}
    sources.update({path: (REPO / path).read_text() for path in docstring_modules()})
    out = []
    for where, text in sources.items():
        if "+SKIP" in text:
            out.extend((where, ex.lineno + 1, ex.source.strip())
                       for ex in doctest.DocTestParser().get_examples(text, where)
                       if ex.options.get(doctest.SKIP))
    return out


def test_every_skipped_example_is_listed_with_its_reason():
    unlisted = [f"{where}:{line}: {source}" for where, line, source in _skipped_examples()
                if not any(w == where and piece in source for w, piece in SKIPPED)]
    assert not unlisted, ("examples marked '# doctest: +SKIP' but not in SKIPPED (add them "
                          "with the reason, or make them run):\n" + "\n".join(unlisted))


@pytest.mark.parametrize(("where", "piece"), list(SKIPPED), ids=[w for w, _ in SKIPPED])
def test_skipped_example(where, piece):
    """Reports the skipped examples with their reason; fails if the entry is stale."""
    lines = [line for w, line, source in _skipped_examples() if w == where and piece in source]
    assert lines, f"SKIPPED lists {piece!r} of {where}: no such skipped example"
    pytest.skip(f"{where}, line(s) {', '.join(map(str, lines))}: {SKIPPED[where, piece]}")


# --------------------------------------------------------------------------------------
# every Python block is a doctest, every included script runs

#: Python files the pages include (``literalinclude``) and the test that runs each.
INCLUDED = {
    "fair_statsmodels.py": "test_fair_scripts_and_the_figures_quoted_from_them",
    "fair_dpreg.py": "test_fair_scripts_and_the_figures_quoted_from_them",
    "my_study.py": "test_page_examples[user_guide/studies.rst] (from my_study import study)",
}


def test_python_blocks_are_doctests():
    """A Python block without ``>>>`` would run nowhere: make it a doctest (or, for a
    module, a file in docs/examples that a test imports or runs)."""
    problems = []
    for page in rst_pages():
        for block in code_blocks(read_page(page)):
            where = f"docs/{page}:{block['line']}"
            if block["kind"] == "literalinclude":
                name = Path(block["body"]).name
                if name.endswith(".py") and name not in INCLUDED:
                    problems.append(f"{where}: includes {name}, which no test runs")
            elif looks_like_python(block) and ">>>" not in block["body"]:
                problems.append(f"{where}: a Python block that is not a doctest")
    assert not problems, "\n".join(problems)
    assert "from my_study import" in read_page("user_guide/studies.rst")


def test_fair_scripts_and_the_figures_quoted_from_them(docs_sandbox, capsys):
    """Both spellings of the Fair analysis run; the figures the page quotes from them
    are theirs; the page's command line (its spec.toml, its console command) runs."""
    import dpreg
    from dpreg.__main__ import main

    sm_ns = runpy.run_path(str(EXAMPLES / "fair_statsmodels.py"))
    with warnings.catch_warnings():
        # the curvature correction moves rate by about 1.06 standard errors, under the
        # check's limit: the fit and its predictions do not warn
        warnings.simplefilter("error", dpreg.exceptions.ConvergenceWarning)
        dp_ns = runpy.run_path(str(EXAMPLES / "fair_dpreg.py"))
    out = capsys.readouterr().out
    assert "Logit Regression Results" in out and "DP regression results" in out
    assert "refused: prsquared" in out
    sm, dp, new = sm_ns["res"], dp_ns["res"], dp_ns["new"]
    p_sm, p_dp = sm.predict(new), dp.predict(new)
    quoted = {
        "the private fit's rigorous epsilon": f"({dp.ledger.epsilon_rigorous[0]:.2f}, 1e-5)",
        "the private rate": f"{dp.params['rate']:.3f} with private standard error "
                            f"{dp.bse['rate']:.3f}",
        "statsmodels' rate": f"statsmodels' {sm.params['rate']:.3f} with {sm.bse['rate']:.3f}",
        "the predictions": f"are {p_dp[0]:.2f} and {p_dp[1]:.2f} against {p_sm[0]:.2f} and "
                           f"{p_sm[1]:.2f}",
        "the rate's correction": f"moves ``rate`` by "
                                 f"{dp.convergence.curvature_bias['rate']:.2f} standard "
                                 f"errors, under the limit of "
                                 f"{dpreg.inference.diagnostics.CURVATURE_CORRECTED_LIMIT:g}",
    }
    text = " ".join(read_page("user_guide/statsmodels.rst").split())
    stale = {what: figures for what, figures in quoted.items() if figures not in text}
    assert not stale, f"docs/user_guide/statsmodels.rst quotes other figures; now: {stale}"

    # the command line: fair.csv and the page's spec.toml and console command
    blocks = code_blocks(read_page("user_guide/statsmodels.rst"))
    spec = next(b["body"] for b in blocks if b["body"].startswith("# spec.toml"))
    (docs_sandbox / "spec.toml").write_text(spec + "\n")
    dp_ns["data"].to_csv("fair.csv", index=False)
    console = next(b["body"] for b in blocks if b["language"] == "console")
    argv = shlex.split(console.replace("\\\n", " "))
    assert argv[:3] == ["$", "python", "-m"] and argv[3] == "dpreg"
    assert main(argv[4:]) == 0
    out = capsys.readouterr().out
    assert "\\begin{tabular}" in out and "rate" in out and "C(religious)[T.4.0]" in out


# --------------------------------------------------------------------------------------
# shell commands: each parsed by its own parser

#: Inline text that starts like a command but is not one.
NOT_COMMANDS = {
    "python -m dpreg fit: PrivacyLeakWarning: ...",  # how the command prints a warning
}


def shell_commands() -> list[tuple[str, int, str]]:
    """(page, line, command) of every ``python ...`` and ``pip ...`` command of the docs:
    lines of shell blocks (continuations joined, ``$`` prompts and comments dropped, a
    ``# or: python ...`` alternative kept) and inline literals ````python ...````."""
    out = []
    for page in rst_pages():
        text = read_page(page)
        for block in code_blocks(text):
            if not is_shell(block):
                continue
            lines = block["body"].replace("\\\n", " ").splitlines()
            for offset, line in enumerate(lines):
                line = line.strip()
                line = re.sub(r"^# or: ", "", re.sub(r"^\$ ", "", line))
                if re.match(r"(python|pip) ", line):
                    out.append((page, block["line"] + offset, line))
        for match in re.finditer(r"``(python [^`]+?)``", text):
            command = " ".join(match.group(1).split())
            if command not in NOT_COMMANDS:
                out.append((page, text.count("\n", 0, match.start()) + 1, command))
    return out


class _Parsed(Exception):
    """Raised by :func:`_parse_only` in place of running the command."""


def _parse_only(self, args=None, namespace=None, _parse=argparse.ArgumentParser.parse_args):
    _parse(self, args, namespace)  # argparse exits with status 2 on a bad command line
    raise _Parsed


def _check_command(command: str, monkeypatch) -> None:
    argv = shlex.split(command, comments=True)
    if argv[0] == "pip":
        extras = re.findall(r"^(\w+) =$", (REPO / "setup.cfg").read_text(), re.M)
        for spec in argv[2:]:
            wanted = re.findall(r"\[([\w,]+)\]", spec)
            missing = [e for w in wanted for e in w.split(",") if e not in extras]
            assert not missing, f"setup.cfg declares no extra {missing} ({extras})"
        return
    assert argv[0] == "python"
    if argv[1:3] == ["-m", "venv"]:
        return
    if argv[1:3] == ["-m", "pytest"]:
        paths = [a for a in argv[3:] if not a.startswith("-") and "/" in a]
        assert all((REPO / p).exists() for p in paths), paths
        markers = (REPO / "pyproject.toml").read_text()
        marks = [argv[k + 1] for k in range(3, len(argv) - 1) if argv[k] == "-m"]
        assert all(f'"{m}:' in markers for m in marks), f"no such marker: {marks}"
        return
    if argv[1:3] == ["-m", "sphinx"]:  # the source folder exists (the build runs in CI)
        folders = [a for a in argv[3:] if not a.startswith("-")]
        assert folders and (REPO / folders[0] / "conf.py").is_file(), folders
        return
    if argv[1] == "-c":
        with contextlib.redirect_stdout(io.StringIO()):
            exec(argv[2], {"__name__": "__docs__"})
        return
    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", _parse_only)
    if argv[1:3] == ["-m", "dpreg"]:
        from dpreg.__main__ import main

        def run():
            main(argv[3:])
    else:
        script = REPO / argv[1]
        assert script.is_file(), f"{argv[1]} does not exist"
        args = argv[2:]
        if "argparse" not in script.read_text():
            assert not args, f"{argv[1]} takes no options, yet the docs give it {args}"
            return
        monkeypatch.setattr(sys, "argv", [str(script), *args])
        monkeypatch.syspath_prepend(str(script.parent))

        def run():
            runpy.run_path(str(script), run_name="__main__")
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            run()
    except _Parsed:
        return
    except SystemExit as exc:
        pytest.fail(f"{command!r} is refused by its parser ({exc.code}): {err.getvalue()}")
    pytest.fail(f"{command!r} ran without parsing a command line")


#: The README's commands with placeholders for the reader's own values, and the values a
#: test parses them with.
README_PLACEHOLDERS = {"FORMULA": "'y ~ x'", "FILE": "data.csv", "PATH": "STAR_public_use.csv",
                       "study NAME": "study engines"}


def readme_commands() -> list[tuple[str, int, str]]:
    """(``"README.md"``, line, command) of every ``python ...`` and ``pip ...`` command of
    the README: the lines of its shell blocks, split at ``&&``, and its inline literals,
    placeholders replaced (:data:`README_PLACEHOLDERS`)."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    found = []
    for match in re.finditer(r"```bash\n(.*?)```", text, re.S):
        for part in match.group(1).split("&&"):
            found.append((match.start(), part))
    for match in re.finditer(r"(?<!`)`((?:python|pip)\s[^`]+?)`(?!`)", text):
        for part in match.group(1).split("&&"):
            found.append((match.start(), part))
    out = []
    for start, command in found:
        command = " ".join(command.split())
        for placeholder, value in README_PLACEHOLDERS.items():
            command = re.sub(rf"\b{placeholder}\b", value, command)
        if re.match(r"(python|pip) ", command):
            out.append(("README.md", text.count("\n", 0, start) + 1, command))
    return out


_COMMANDS = shell_commands() + readme_commands()


@pytest.mark.parametrize("command", [c for _, _, c in _COMMANDS],
                         ids=[f"{p}:{line}" for p, line, _ in _COMMANDS])
def test_shell_command_parses(command, monkeypatch, docs_sandbox):
    """The script, subcommand, study and every option of the command exist and take the
    values given (the command is parsed, not run)."""
    _check_command(command, monkeypatch)


def test_demo_command_prints_the_quickstart(capsys):
    """``python -m dpreg demo  # the analysis above, printed`` (quickstart.rst): the
    demo's coefficient table is the one the quick start prints."""
    from dpreg.__main__ import main

    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if re.match(r"(Intercept|x\d) +-?\d", line)]
    assert len(rows) == 4
    text = " ".join(read_page("quickstart.rst").split())
    assert all(" ".join(row.split()) in text for row in rows), "\n".join(rows)


def test_study_list_command(capsys):
    from dpreg.__main__ import main
    from dpreg.studies import list_studies

    assert main(["study", "list"]) == 0
    out = capsys.readouterr().out
    assert all(re.search(rf"^{re.escape(name)} ", out, re.M) for name in list_studies())
