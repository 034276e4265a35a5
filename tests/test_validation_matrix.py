"""The validation matrix: every public entry point against bad input (issue 8).

Each case names an entry point, the input, the documented error class and a fragment of
the message (which must name the column, value or parameter at fault). None may end in
a numba traceback, a NaN result or a silent change of the data. The same table is
rendered in docs/user_guide/validation_matrix.rst.
"""

import math

import numpy as np
import pandas as pd
import pytest

import dpreg
from dpreg import privacy
from dpreg.exceptions import (
    BudgetExceededError,
    DataError,
    DatasetNotFoundError,
    FormulaError,
    OptionError,
    PrivacyLeakError,
)
from dpreg.inference import rs_pivot

RNG = np.random.default_rng(8)
N = 120
BASE = pd.DataFrame({"y": RNG.normal(size=N), "x": RNG.uniform(-1, 1, N),
                     "g": RNG.choice(["a", "b"], N), "b": RNG.integers(0, 2, N)})
OK = dict(bounds={"y": (-4, 4), "x": (-1, 1)}, mu=1.0, random_state=0, steps=500)


def frame(**changes):
    df = BASE.copy()
    for col, (rows, value) in changes.items():
        if col not in df:
            df[col] = 1.0
        df[col] = df[col].astype(object) if isinstance(value, str) else df[col]
        df.loc[rows, col] = value
    return df


def ols(df=None, formula="y ~ x", **kw):
    return lambda: dpreg.dp_ols(formula, BASE if df is None else df, **{**OK, **kw})


def _dask(df):
    import dask.dataframe as dd  # the test extra has dask

    return dd.from_pandas(df, npartitions=2)


def oracle(df=None, formula="y ~ x", **kw):
    """Identification (n >= p, full rank) is checked by the oracle only (issue 15)."""
    return lambda: dpreg.oracle(formula, BASE if df is None else df,
                                **{"bounds": OK["bounds"], **kw})



CASES = {
    # data
    "nan outcome, missing=raise": (
        ols(frame(y=([3], np.nan)), missing="raise"),
        DataError, "'y': 1"),
    "nan covariate, missing=raise": (
        ols(frame(x=([4, 5], np.nan)), missing="raise"),
        DataError, "'x': 2"),
    "all rows missing": (ols(frame(x=(slice(None), np.nan))), DataError, "no rows left"),
    "inf outcome": (ols(frame(y=([2], np.inf))), DataError, "'y'"),
    "inf covariate": (ols(frame(x=([2], -np.inf))), DataError, "'x'"),
    "text in numeric column": (ols(frame(x=([7], "abc"))), DataError, "mixes numbers and text"),
    "text outcome": (ols(formula="g ~ x"), DataError, "not numeric"),
    "empty frame": (ols(BASE.iloc[:0]), DataError, "no rows"),
    "oracle: one row": (oracle(BASE.iloc[:1]), DataError, "more regressors"),
    "oracle: p > n": (
        oracle(BASE.iloc[:3], formula="y ~ x + b + g + x:b"),
        DataError, "more regressors"),
    "oracle: constant column with intercept": (
        oracle(frame(k=(slice(None), 1.0)), formula="y ~ x + k"),
        DataError, "'k'"),
    "oracle: collinear columns": (
        oracle(BASE.assign(x2=2 * BASE.x), formula="y ~ x + x2"),
        DataError, "x2"),
    "outcome bounds near 1e301": (
        ols(bounds={"y": (-1e301, 1e301), "x": (-1, 1)}),
        OptionError, "bounds['y']"),
    "object column holding numbers": (
        ols(BASE.assign(x=BASE.x.astype(object))),
        DataError, "dtype object but holds numbers"),
    "datetime column": (
        ols(BASE.assign(t=pd.Timestamp("2020-01-01") + pd.to_timedelta(np.arange(N), "D")),
            formula="y ~ x + t"),
        DataError, "datetime64"),
    "term reading other rows (mean)": (
        ols(formula="y ~ I(x - x.mean())"),
        PrivacyLeakError, "I(x - c1)"),
    "term reading other rows (max)": (
        ols(formula="y ~ I(x / x.max())"),
        PrivacyLeakError, "I(x / x.max())"),
    "term reading other rows (median, std)": (
        ols(formula="y ~ I((x - np.median(x)) / np.std(x))"),
        PrivacyLeakError, "I((x - c1) / c2)"),
    "bounds on a transformed term in an interaction": (
        ols(BASE.assign(w=np.exp(BASE.x)), formula="y ~ x + np.log(w):x",
            bounds={"y": (-4, 4), "x": (-1, 1), "np.log(w)": (-1, 1)}),
        OptionError, "raw column(s) ['w']"),
    "bounds on a misspelt column": (
        ols(bounds={"y": (-4, 4), "xx": (-1, 1)}),
        OptionError, "did you mean ['x']"),
    "intercept index out of range": (
        lambda: dpreg.DPRegression(np.ones(5), np.ones((5, 1)), intercept=3),
        OptionError, "intercept"),
    "duplicate column names": (ols(pd.concat([BASE, BASE[["x"]]], axis=1)), DataError, "duplicate"),
    "not a DataFrame": (lambda: dpreg.dp_ols("y ~ x", [1, 2, 3], mu=1), DataError, "DataFrame"),
    "missing column": (ols(formula="y ~ nope"), FormulaError, "nope"),
    "no regressors": (ols(formula="y ~ 0"), DataError, "no columns"),
    "not a formula": (ols(formula="y x"), FormulaError, "formula"),
    "value outside declared levels": (
        ols(formula="y ~ g", levels={"g": ["a"]}),
        OptionError, "levels"),
    "level outside declared list": (
        ols(formula="y ~ g", levels={"g": ["a", "c"]}),
        DataError, "outside the declared"),
    "stateful transform": (ols(formula="y ~ standardize(x)"), PrivacyLeakError, "standardize"),
    "logit outcome not 0/1": (
        lambda: dpreg.dp_logit("y ~ x", BASE, mu=1, x_bound=2),
        DataError, "0/1"),
    "logit outcome three levels": (
        lambda: dpreg.dp_logit("g2 ~ x", BASE.assign(g2=RNG.choice(list("abc"), N)), mu=1,
                               x_bound=2),
        DataError, "not numeric"),
    "arrays of different lengths": (
        lambda: dpreg.DPRegression(np.ones(5), np.ones((4, 1))),
        DataError, "rows"),
    "non-numeric arrays": (
        lambda: dpreg.DPRegression(["a"] * 3, np.ones((3, 1))),
        DataError, "numeric"),
    # budgets
    "negative mu": (ols(mu=-1.0), BudgetExceededError, "mu"),
    "infinite mu": (ols(mu=math.inf), BudgetExceededError, "mu"),
    "nan mu": (ols(mu=math.nan), BudgetExceededError, "mu"),
    "no budget": (ols(mu=None), BudgetExceededError, "exactly one"),
    "two budgets": (ols(rho=1.0), BudgetExceededError, "one"),
    "epsilon without delta": (ols(mu=None, epsilon=1.0), BudgetExceededError, "delta"),
    "delta >= 1": (ols(mu=None, epsilon=1.0, delta=1.0), BudgetExceededError, "delta"),
    "negative epsilon": (ols(mu=None, epsilon=-1.0, delta=1e-5), BudgetExceededError, "epsilon"),
    "negative rho": (ols(mu=None, rho=-0.1), BudgetExceededError, "rho"),
    "budget too small to run": (ols(mu=1e-300), BudgetExceededError, "too small"),
    # options
    "unknown option": (ols(bach_size=3), OptionError, "batch_size"),
    "unknown engine": (ols(engine="adam"), OptionError, "engine"),
    "unknown family": (
        lambda: dpreg.DPRegression.from_formula("y ~ x", BASE, family="probit"),
        OptionError, "family"),
    "batch larger than n": (ols(batch_size=N + 1), OptionError, "batch_size"),
    "steps not an integer": (ols(steps=10.5), OptionError, "steps"),
    "one step": (ols(steps=1), OptionError, "steps"),
    "infinite clip": (ols(clip=math.inf), OptionError, "clip"),
    "negative lr": (ols(lr=-0.1), OptionError, "lr"),
    "lr_decay out of range": (ols(lr_decay=0.4), OptionError, "lr_decay"),
    "budget split not summing to one": (
        ols(budget_split={"path": 0.5, "hessian": 0.1, "score": 0.1}),
        OptionError, "sum"),
    "contradictory split (hessian without score)": (
        ols(budget_split={"path": 0.5, "hessian": 0.5}),
        OptionError, "score"),
    "bounds reversed": (ols(bounds={"y": (4, -4)}), OptionError, "bounds['y']"),
    "bounds on a categorical": (
        ols(formula="y ~ g", bounds={"g": (0, 1)}),
        OptionError, "categorical"),
    "bounds on an unknown variable": (ols(bounds={"zz": (0, 1)}), OptionError, "zz"),
    "family fixed by the function": (ols(family="huber"), OptionError, "family"),
    "tau out of range": (
        lambda: dpreg.dp_expectile("y ~ x", BASE, tau=1.5, mu=1),
        OptionError, "tau"),
    "c not positive": (lambda: dpreg.dp_huber("y ~ x", BASE, c=0, mu=1), OptionError, "c must"),
    "tau for a family without it": (
        lambda: dpreg.DPRegression.from_formula("y ~ x", BASE, family="huber", tau=0.2),
        OptionError, "tau"),
    "bad weights": (
        lambda: dpreg.dp_huber("y ~ x", BASE, mu=1, weights="x"),
        OptionError, "weights"),
    "bad random_state": (ols(random_state="seed"), OptionError, "random_state"),
    "bad start_params": (ols(start_params=[1.0]), OptionError, "start_params"),
    "strict with undeclared bounds": (
        ols(bounds={"y": (-4, 4)}, strict=True),
        PrivacyLeakError, "'x'"),
    # results, calculator, pivot, data
    "conf_int alpha out of range": (lambda: ols()().conf_int(1.5), OptionError, "alpha"),
    "conf_int unknown method": (
        lambda: ols()().conf_int(method="bootstrap"),
        OptionError, "bootstrap"),
    "predict without exog": (lambda: ols()().predict(), OptionError, "exog"),
    "predict with wrong width": (lambda: ols()().predict(np.ones((2, 5))), DataError, "columns"),
    "summary_col of nothing": (lambda: dpreg.summary_col([]), OptionError, "at least one"),
    "calculator: batch larger than n": (
        lambda: privacy.dpsgd_mu(10, 20, 100, 1.0),
        OptionError, "batch_size"),
    "calculator: negative noise": (
        lambda: privacy.dpsgd_mu(100, 1, 100, -1.0),
        OptionError, "noise_multiplier"),
    "calculator: delta >= 1": (lambda: privacy.mu_to_epsilon(1.0, 1.0), Exception, "delta"),
    "calculator: unknown sampling": (
        lambda: privacy.calibrate_dpsgd(1.0, 100, 1, 100, sampling="x"),
        OptionError, "sampling"),
    "pivot: level out of range": (lambda: rs_pivot.ppf(1.5), OptionError, "q"),
    "pivot: alpha out of range": (lambda: rs_pivot.critical_value(0.0), OptionError, "alpha"),
    "STAR file not found": (
        lambda: dpreg.datasets.load_star("/nonexistent"),
        DatasetNotFoundError, "Angrist"),
    "simulator: bad covariance": (
        lambda: dpreg.datasets.simulate_linear(10, cov="ar"),
        OptionError, "cov"),
    # engines other than DP-SGD, and streams
    "dpgd: runs differ from n_estimates": (
        ols(engine="dpgd", steps=None, cov_type="runs", runs=3),
        OptionError, "runs"),
    "dpgd: cov_type of another engine": (
        ols(engine="dpgd", steps=None, cov_type="plugin"),
        OptionError, "not available with engine 'dpgd'"),
    "dpgd: one estimate": (
        ols(engine="dpgd", steps=None, n_estimates=1),
        OptionError, "n_estimates"),
    "dpgd: bad aggregate": (
        ols(engine="dpgd", steps=None, aggregate="median"),
        OptionError, "aggregate"),
    "dpgd: ema_beta out of range": (
        ols(engine="dpgd", steps=None, ema_beta=1.0),
        OptionError, "ema_beta"),
    "adassp: family other than linear": (
        lambda: dpreg.dp_huber("y ~ x", BASE, mu=1, engine="adassp"),
        OptionError, "linear"),
    "ssp: family other than linear": (
        lambda: dpreg.dp_huber("y ~ x", BASE, mu=1, bounds=OK["bounds"], engine="ssp"),
        OptionError, "linear"),
    "ssp: outcome without bounds": (
        lambda: dpreg.dp_ols("y ~ x", BASE, mu=1, bounds={"x": (-1, 1)}, engine="ssp"),
        OptionError, "bounds on the outcome"),
    "ssp: sandwich without robust=True": (
        ols(engine="ssp", steps=None, cov_type="sandwich"), OptionError, "robust=True"),
    "ssp: Dask frame with another engine": (
        lambda: dpreg.dp_ols("y ~ x", _dask(BASE), mu=1, bounds=OK["bounds"],
                             engine="dpsgd"),
        OptionError, "engine='ssp'"),
    "ssp: Dask frame, categories not declared": (
        lambda: dpreg.dp_ols("y ~ x + g", _dask(BASE), mu=1, bounds=OK["bounds"],
                             engine="ssp"),
        OptionError, "levels="),
    "ldp_sgd: steps given": (ols(engine="ldp_sgd"), OptionError, "steps"),
    "stream: option of another engine": (
        lambda: dpreg.LDPStream("y ~ x", mu=1, steps=10),
        OptionError, "do not apply"),
    "stream: chunk lacks a column": (
        lambda: dpreg.LDPStream("y ~ x", mu=1).partial_fit(BASE).partial_fit(BASE[["y"]]),
        DataError, "lacks column"),
    "stream: column changed type": (
        lambda: dpreg.LDPStream("y ~ x", mu=1).partial_fit(BASE).partial_fit(
            BASE.assign(x=BASE.x.astype(str))),
        DataError, "changed type"),
    "stream: missing value (missing=raise)": (
        lambda: dpreg.LDPStream("y ~ x", mu=1).partial_fit(BASE).partial_fit(
            frame(x=([1], np.nan))),
        DataError, "'x': 1"),
    "stream: results before any row": (
        lambda: dpreg.LDPStream("y ~ x", mu=1).results(),
        DataError, "no rows yet"),
    "stream: file not found": (
        lambda: dpreg.LDPStream("y ~ x", mu=1).consume("/nonexistent.csv"),
        DataError, "no such file"),
    "stream: not a chunk": (
        lambda: dpreg.LDPStream("y ~ x", mu=1).partial_fit([1, 2]),
        DataError, "DataFrame"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_gives_documented_error(case):
    call, error, fragment = CASES[case]
    before = BASE.copy()
    with pytest.raises(error) as info:
        call()
    assert fragment.lower() in str(info.value).lower(), (case, str(info.value))
    assert "numba" not in str(info.value).lower()
    pd.testing.assert_frame_equal(BASE, before)  # no silent change of the data


def test_matrix_is_large_enough():
    assert len(CASES) >= 40


def test_matrix_page_lists_every_case():
    from pathlib import Path

    page = Path(__file__).resolve().parents[1] / "docs" / "user_guide" / "validation_matrix.rst"
    text = page.read_text()
    missing = [c for c in CASES if c not in text]
    assert not missing, missing


def render_page() -> str:
    """The docs page (``python tests/test_validation_matrix.py`` rewrites it)."""
    lines = ["Validation matrix", "=================", "",
             "Every public entry point against bad input: the error class and a fragment of "
             "its message,", "checked by ``tests/test_validation_matrix.py`` (which also "
             "checks that the caller's data", "is unchanged and that no message comes from "
             "numba).", "", ".. list-table::", "   :header-rows: 1", "",
             "   * - Case", "     - Error", "     - Message names"]
    for case in sorted(CASES):
        _, error, fragment = CASES[case]
        lines += [f"   * - {case}", f"     - ``{error.__name__}``", f"     - ``{fragment}``"]
    return "\n".join(lines) + "\n" + PROPERTIES


PROPERTIES = """
Property-based tests
--------------------
``tests/test_properties.py`` draws random inputs with hypothesis, 1,000 examples per
property, all run in CI (4 minutes together, 2.6 of them for (epsilon, delta)):

* **front end**: random frames (NaN, inf, values up to 1e6, categories) with random
  formulas and ``missing=`` give a finite design or one of dpreg's documented errors,
  and never change the caller's frame;
* **fits with** ``mu=`` **or** ``rho=``: random data, bounds, sampling, batch sizes,
  steps, clipping, step sizes, ``cov_type`` and budget splits give finite estimates,
  ordered finite intervals and p-values in [0, 1] for every inference method, and a
  ledger that spends no more than the request;
* **fits with** ``epsilon=, delta=``: the same, with the spent epsilon from the
  rigorous accountant (PLD: dp-accounting's for Poisson sampling,
  :mod:`dpreg.privacy.wor_pld` for sampling without replacement);
* **LDP streams**: any cut of the rows into chunks gives the one-shot numbers bit for
  bit, the results are finite, and the ledger stays within mu.
"""


if __name__ == "__main__":
    from pathlib import Path

    out = Path(__file__).resolve().parents[1] / "docs" / "user_guide" / "validation_matrix.rst"
    out.write_text(render_page())
    print(f"wrote {out} ({len(CASES)} cases)")
