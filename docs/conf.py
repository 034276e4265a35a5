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
numpydoc_validation_checks = set()
autodoc_typehints = "none"
intersphinx_mapping = {}
exclude_patterns = ["_build"]
html_theme = "alabaster"
html_static_path = []
nitpicky = False
