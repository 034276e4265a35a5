"""Command line: ``python -m dpreg demo | fit | replicate | study``."""

from __future__ import annotations

import argparse
import sys
import time

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


def _parse_bounds(items) -> dict:
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
    """``NAME=A,B,C`` -> {NAME: [A, B, C]} with tokens cast to the column's type."""
    levels = {}
    for item in items or []:
        name, _, rest = item.partition("=")
        if not rest or name not in data.columns:
            raise SystemExit(f"--levels expects COLUMN=A,B,C with a column of the data, got {item!r}")
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
    # Public bounds a researcher would declare from the measurement scales, and a clipping
    # norm chosen so that a typical residual times a typical row norm is not clipped.
    bounds = {"y": (-6.0, 6.0), **{f"x{j}": (-3.0, 3.0) for j in (1, 2, 3)}}
    print(f"Simulated linear model, n = {args.n}, true coefficients "
          f"{dict(sim.params.round(3))}, seed {args.seed}\n")
    t0 = time.perf_counter()
    res = dpreg.dp_ols(sim.formula, sim.data, bounds=bounds, clip=6.0, random_state=args.seed,
                       **_budget(args, default_mu=1.0))
    print(res.summary().as_text())
    print(f"\nFitted in {time.perf_counter() - t0:.2f} s.")
    return 0


def cmd_fit(args) -> int:
    import dpreg

    data = pd.read_csv(args.data)
    options = dict(bounds=_parse_bounds(args.bounds), levels=_parse_levels(args.levels, data),
                   random_state=args.seed,
                   cov_type=args.cov_type, sampling=args.sampling, progress=args.progress)
    for name in ("batch_size", "steps", "clip", "lr", "x_bound"):
        if getattr(args, name) is not None:
            options[name] = getattr(args, name)
    res = dpreg.dp_ols(args.formula, data, **options, **_budget(args))
    print(res.summary().as_text())
    return 0


def cmd_replicate(args) -> int:
    from dpreg.replicate import replicate_star

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
    fit.add_argument("--bounds", nargs="*", metavar="NAME=LOWER:UPPER")
    fit.add_argument("--levels", nargs="*", metavar="COLUMN=A,B,C",
                     help="public categories of categorical columns")
    fit.add_argument("--seed", type=int)
    fit.add_argument("--cov-type", dest="cov_type", default="plugin", choices=["plugin", "rs"])
    fit.add_argument("--sampling", default="uniform", choices=["uniform", "poisson"])
    fit.add_argument("--batch-size", dest="batch_size", type=int)
    fit.add_argument("--steps", type=int)
    fit.add_argument("--clip", type=float)
    fit.add_argument("--lr", type=float)
    fit.add_argument("--x-bound", dest="x_bound", type=float)
    fit.add_argument("--progress", action="store_true")
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

    from dpreg.studies.command import add_study_parser

    add_study_parser(sub)

    args = parser.parse_args(argv)
    from dpreg.exceptions import DPRegError

    try:
        return args.func(args)
    except DPRegError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
