"""Command line: ``python -m dpreg demo | fit | replicate | study``."""

from __future__ import annotations

import argparse
import json
import sys
import time
import tomllib
import warnings
from pathlib import Path

import pandas as pd

__all__ = ["main"]


def _budget_args(parser):
    group = parser.add_argument_group("privacy budget (give one)")
    group.add_argument("--mu", type=float, help="Gaussian DP budget")
    group.add_argument("--epsilon", type=float, help="epsilon of (epsilon, delta)-DP")
    group.add_argument("--delta", type=float, help="delta of (epsilon, delta)-DP")
    group.add_argument("--rho", type=float, help="zCDP budget")


def _budget(args, default_mu=None) -> dict:
    out = {k: getattr(args, k) for k in ("mu", "epsilon", "delta", "rho")
           if getattr(args, k) is not None}
    if not out and default_mu is not None:
        out["mu"] = default_mu
    return out


OUTPUTS = ("text", "latex", "html", "csv")


def _spec_file(items, section: str):
    """``{name: value}`` from a JSON or TOML file if ``items`` is one file name, else None.

    The file holds the mapping at its top level, or under a ``[bounds]`` / ``[levels]``
    table (``"bounds"`` / ``"levels"`` key in JSON), so one file can declare both.
    """
    if not items or len(items) != 1 or "=" in items[0]:
        return None
    path = Path(items[0])
    if not path.is_file():
        raise SystemExit(f"--{section}: {items[0]!r} is neither NAME=... nor a JSON or TOML "
                         "file")
    try:
        if path.suffix.lower() == ".toml":
            content = tomllib.loads(path.read_text())
        else:
            content = json.loads(path.read_text())
    except (ValueError, tomllib.TOMLDecodeError) as err:
        raise SystemExit(f"--{section}: cannot read {str(path)!r} as "
                         f"{'TOML' if path.suffix.lower() == '.toml' else 'JSON'}: {err}") from None
    if not isinstance(content, dict):
        raise SystemExit(f"--{section}: {str(path)!r} must hold a mapping {{name: ...}}")
    inner = content.get(section)
    return inner if isinstance(inner, dict) else content


def _parse_bounds(items) -> dict:
    from_file = _spec_file(items, "bounds")
    if from_file is not None:
        return {str(k): tuple(v) if isinstance(v, list) else v for k, v in from_file.items()}
    bounds = {}
    for item in items or []:
        try:
            name, rng = item.split("=")
            lo, hi = (float(v) for v in rng.split(":"))
        except ValueError:
            raise SystemExit(f"--bounds expects NAME=LOWER:UPPER, got {item!r}") from None
        bounds[name] = (lo, hi)
    return bounds


def _parse_levels(items, data) -> dict:
    """``NAME=A,B,C`` -> {NAME: [A, B, C]} with tokens cast to the column's type, or the
    mapping of a JSON or TOML file."""
    from_file = _spec_file(items, "levels")
    if from_file is not None:
        return {str(k): list(v) for k, v in from_file.items()}
    levels = {}
    for item in items or []:
        name, _, rest = item.partition("=")
        if not rest or name not in data.columns:
            raise SystemExit("--levels expects COLUMN=A,B,C with a column of the data, got "
                             f"{item!r}")
        tokens = rest.split(",")
        if pd.api.types.is_integer_dtype(data[name].dtype):
            tokens = [int(t) for t in tokens]
        elif pd.api.types.is_float_dtype(data[name].dtype):
            tokens = [float(t) for t in tokens]
        levels[name] = tokens
    return levels


def cmd_demo(args) -> int:
    import dpreg

    sim = dpreg.datasets.simulate_linear(args.n, p=3, intercept=True, random_state=args.seed)
    # Public bounds a researcher would declare from the measurement scales; clipping norm,
    # step size and schedule are the package's defaults.
    bounds = {"y": (-6.0, 6.0), **{f"x{j}": (-3.0, 3.0) for j in (1, 2, 3)}}
    truth = ", ".join(f"{name} = {float(value):.3g}" for name, value in sim.params.items())
    print(f"Simulated linear model, n = {args.n}, true coefficients {truth}, seed "
          f"{args.seed}\n")
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        # the data are simulated and the seed makes the demo reproducible: no release
        warnings.simplefilter("ignore", dpreg.exceptions.SeedReuseWarning)
        res = dpreg.dp_ols(sim.formula, sim.data, bounds=bounds, random_state=args.seed,
                           **_budget(args, default_mu=1.0))
    print(res.summary().as_text())
    print(f"\nFitted in {time.perf_counter() - t0:.2f} s.")
    return 0


def cmd_fit(args) -> int:
    import dpreg

    data = pd.read_csv(args.data)
    family = _family_names()[args.family]
    model_opts = dict(bounds=_parse_bounds(args.bounds), levels=_parse_levels(args.levels, data))
    if args.c is not None:
        model_opts["c"] = args.c
    if args.tau is not None:
        model_opts["tau"] = args.tau
    options = dict(random_state=args.seed, engine=args.engine, progress=args.progress,
                   strict=args.strict)
    for name in ("cov_type", "sampling", "batch_size", "steps", "clip", "lr", "x_bound",
                 "ranges", "groups", "max_group_size", "absorb"):
        if getattr(args, name) is not None:
            options[name] = getattr(args, name)
    if args.robust:
        options["robust"] = True
    # Warnings are about the command's inputs: report them as the command's, not as
    # lines of dpreg's source.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            model = dpreg.DPRegression.from_formula(args.formula, data, family=family,
                                                    **model_opts)
            res = model.fit(**options, **_budget(args))
        except dpreg.exceptions.PrivacyLeakError as err:
            raise SystemExit(f"python -m dpreg fit: refused (--strict): {err}") from None
    for w in caught:
        print(f"python -m dpreg fit: {w.category.__name__}: {w.message}", file=sys.stderr)
    if args.output == "csv":
        print(res.summary_frame(alpha=args.alpha).to_csv(), end="")
    else:
        smry = res.summary(alpha=args.alpha)
        print({"text": smry.as_text, "latex": smry.as_latex, "html": smry.as_html}[args.output]())
        # privacy warnings belong with the table they qualify, not on stderr alone
        leaks = [w for w in caught if issubclass(w.category, dpreg.PrivacyLeakWarning)]
        if leaks and args.output == "text":
            print("\nPRIVACY WARNINGS (inputs read off the data; --strict refuses them):")
            for w in leaks:
                print(f"- {w.message}")
    return 0


def _family_names() -> dict[str, str]:
    """``--family`` spellings and the registry's names: statsmodels' name of the model
    where a family has one (``Family.cli_name``), else the registry name
    (:data:`dpreg.families.FAMILIES`)."""
    from dpreg.families import FAMILIES

    return {fam.cli_name or name: name for name, fam in FAMILIES.items()}


def _family_help() -> str:
    """``--family``'s help: each spelling, with what it is where the name does not say."""
    from dpreg.families import FAMILIES

    items = [spelling + (" (squared loss)" if FAMILIES[name].squared_loss else "")
             + (" (with --tau)" if FAMILIES[name].uses_tau else "")
             for spelling, name in _family_names().items()]
    return ", ".join(items[:-1]) + " or " + items[-1] if len(items) > 1 else items[0]


def _engine_names() -> list[str]:
    """The engines of the registry (:data:`dpreg.fits.registry.ENGINES`)."""
    from dpreg.fits.registry import ENGINES

    return list(ENGINES)


def _cov_type_names() -> list[str]:
    """Every engine's interval methods, each once, in the order of the registry of
    methods (:data:`dpreg.inference.methods.METHODS`)."""
    from dpreg.inference.methods import offered_methods

    return list(offered_methods())


def _cov_type_help() -> str:
    """``--cov-type``'s help: each method with its line and the engines offering it."""
    from dpreg.inference.methods import METHODS

    return "; ".join(f"{name}: {METHODS[name].description} ({', '.join(METHODS[name].engines)})"
                     for name in _cov_type_names())


def cmd_replicate(args) -> int:
    from dpreg.studies.star_table1 import replicate_star

    print(replicate_star(path=args.data, mu=args.mu, seed=args.seed, fmt=args.format,
                         runs=args.runs))
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dpreg",
                                     description="Differentially private regression.")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="a complete private analysis of simulated data")
    demo.add_argument("--n", type=int, default=3000)
    demo.add_argument("--seed", type=int, default=2024)
    _budget_args(demo)
    demo.set_defaults(func=cmd_demo)

    fit = sub.add_parser("fit", help="fit a formula to a CSV file and print the summary")
    fit.add_argument("formula")
    fit.add_argument("--data", required=True, help="CSV file")
    fit.add_argument("--family", default="ols", choices=list(_family_names()),
                     help=_family_help())
    fit.add_argument("--c", type=float, help="Huber/expectile truncation constant")
    fit.add_argument("--tau", type=float, help="expectile location in (0, 1)")
    fit.add_argument("--engine", default=None, choices=[*_engine_names(), "auto"],
                     help="default: the library's (linear regression: engine='auto''s "
                          "choice; the other families: newton at n mu >= 25,000 and "
                          "p <= 8, else dpsgd)")
    fit.add_argument("--bounds", nargs="*", metavar="NAME=LOWER:UPPER",
                     help="public bounds: NAME=LOWER:UPPER items, or one JSON/TOML file "
                          "{name: [lower, upper]} (top level or a [bounds] table)")
    fit.add_argument("--levels", nargs="*", metavar="COLUMN=A,B,C",
                     help="public categories of categorical columns: COLUMN=A,B,C items, or "
                          "one JSON/TOML file {column: [...]} (top level or a [levels] table)")
    fit.add_argument("--seed", type=int)
    fit.add_argument("--cov-type", dest="cov_type", choices=_cov_type_names(),
                     metavar="METHOD",
                     help="inference behind bse and p-values (the engine's default if "
                          "omitted): " + _cov_type_help())
    fit.add_argument("--output", default="text", choices=list(OUTPUTS),
                     help="summary as text, LaTeX or HTML, or the coefficient table as CSV")
    fit.add_argument("--alpha", type=float, default=0.05, help="1 - level of the intervals")
    fit.add_argument("--sampling", choices=["uniform", "poisson"],
                     help="DP-SGD subsampling (default uniform)")
    fit.add_argument("--batch-size", dest="batch_size", type=int)
    fit.add_argument("--steps", type=int)
    fit.add_argument("--clip", type=float)
    fit.add_argument("--lr", type=float)
    fit.add_argument("--x-bound", dest="x_bound", type=float)
    fit.add_argument("--ranges", choices=["auto", "declared", "private"],
                     help="'private': spend a small share of the budget (a ledger row) to "
                          "learn tight clipping ranges inside the declared bounds "
                          "(central engines); 'declared': the declared bounds; default "
                          "'auto': private wherever it applies")
    fit.add_argument("--groups", metavar="COLUMN",
                     help="clusters as the privacy unit: the column of cluster labels "
                          "(SSP, the linear default, and DP-SGD); needs --max-group-size")
    fit.add_argument("--max-group-size", dest="max_group_size", type=int, metavar="K",
                     help="public bound on a cluster's rows (each keeps its first K)")
    fit.add_argument("--absorb", metavar="COLUMN",
                     help="SSP: absorb the fixed effects of a categorical column (its "
                          "levels declared in --levels)")
    fit.add_argument("--robust", action="store_true",
                     help="SSP: release the meat of the sandwich (heteroskedasticity- or, "
                          "with --groups, cluster-robust intervals)")
    fit.add_argument("--progress", action="store_true")
    fit.add_argument("--strict", action="store_true",
                     help="refuse (exit with an error) where a bound, category or other "
                          "input would be read off the data instead of warning")
    _budget_args(fit)
    fit.set_defaults(func=cmd_fit)

    rep = sub.add_parser("replicate", help="replicate a published table")
    rep.add_argument("table", choices=["star"])
    rep.add_argument("--data", help="STAR_public_use.csv or its folder (else $DPREG_DATA_DIR)")
    rep.add_argument("--mu", type=float, default=2.0)
    rep.add_argument("--seed", type=int, default=20250101)
    rep.add_argument("--format", choices=["text", "latex", "html"], default="text")
    rep.add_argument("--runs", type=int, default=1,
                     help="also show the spread of the private rows over this many seeds")
    rep.set_defaults(func=cmd_replicate)

    from dpreg.studies.command import add_defaults_parser, add_study_parser

    add_study_parser(sub)
    add_defaults_parser(sub)

    args = parser.parse_args(argv)
    from dpreg.exceptions import DPRegError

    try:
        return args.func(args)
    except DPRegError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
