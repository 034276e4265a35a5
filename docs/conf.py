"""Sphinx configuration of the dpreg documentation (built in CI with -W)."""

import dpreg

project = "dpreg"
author = "dpreg developers"
release = dpreg.__version__  # the one version number (dpreg/__init__.py)
extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.intersphinx",
    "numpydoc",
]
autosummary_generate = True
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
# numpydoc validation of every docstring the API pages render (a failure is a warning, so
# -W makes it an error). Checked: every check of numpydoc ("all") except the ones below,
# which are style choices of this project, not errors:
#   ES01 extended summary, SA01 See Also, EX01 Examples: optional sections;
#   SS05 summary in the infinitive, SS06 one-line summary, GL02 closing quotes on their
#   own line: the docstrings use statsmodels' noun summaries, wrapped over lines;
#   PR07 / RT03 a description for every parameter / return value, PR08 / RT04 starting
#   with a capital: ``alpha : float`` needs no words, and descriptions may start with code.
# So a rendered docstring must have a summary, document every parameter of the signature
# with a type and in order, name what it returns, and keep numpydoc's section order.
numpydoc_validation_checks = {
    "all", "ES01", "SA01", "EX01", "SS05", "SS06", "GL02", "PR07", "RT03", "PR08", "RT04",
}
numpydoc_validation_exclude = {
    # Constructors are documented by their class.
    r"\.__init__$",
    # Results objects that dpreg builds and users never construct: their Attributes
    # section documents them, not a Parameters section.
    r"^dpreg\.DPRegressionResults$",
    r"^dpreg\.results\.ResultsModel$",
    r"^dpreg\.results\.hypothesis\.ContrastResults$",
    r"^dpreg\.results\.prediction\.PredictionResults$",
    r"^dpreg\.results\.margins\.Margins$",
    r"^dpreg\.inference\.rs_joint\.RSInference$",
    r"^dpreg\.inference\.mixed\.MixedInference$",
    # A ScaleBox is a tuple: the methods it inherits are Python's, documented there.
    r"^dpreg\.ScaleBox\.(count|index)$",
}
# DPRegression.fit takes **options (each engine's options record validates them) and
# documents every option one by one in its Parameters section, which numpydoc reads as
# parameters missing from the signature (PR01, PR02): those two checks are off for it.
numpydoc_validation_overrides = {
    "PR01": [r"Total budget in Gaussian DP \(met by the GDP CLT"],
    "PR02": [r"Total budget in Gaussian DP \(met by the GDP CLT"],
}
autodoc_typehints = "none"
intersphinx_mapping = {}
exclude_patterns = ["_build"]
html_theme = "alabaster"
html_static_path = []
nitpicky = False


def check_recorded_runs(app) -> None:
    """Docs that cannot go stale: write the page of stale recorded runs
    (studies/recorded_runs.rst, dpreg.studies.defaults.recorded_runs_page), then fail the
    build when a recorded run the pages quote (docs/studies/results/*-run.json,
    validation/results/) was produced under defaults that have changed since and the
    manifest does not acknowledge it (the error names each run, the defaults that
    changed and the command that reruns it). With DPREG_DOCS_STALE_RUNS=report the
    error is printed and the build goes on (while reruns are pending; CI never sets
    it)."""
    import os
    import sys
    from pathlib import Path

    from dpreg.studies.defaults import StaleRunError, recorded_runs_page
    from dpreg.studies.defaults import check_recorded_runs as check

    root = Path(__file__).resolve().parents[1]
    page = Path(__file__).resolve().parent / "studies" / "recorded_runs.rst"
    text = recorded_runs_page(root)
    if not page.is_file() or page.read_text() != text:  # unchanged: no rebuild
        page.write_text(text)
    try:
        check(root)
    except StaleRunError as err:
        if os.environ.get("DPREG_DOCS_STALE_RUNS") != "report":
            raise
        print(f"DPREG_DOCS_STALE_RUNS=report: {err}", file=sys.stderr)


def setup(app):
    app.connect("builder-inited", check_recorded_runs)
