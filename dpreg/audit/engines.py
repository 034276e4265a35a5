"""Audits of the engines: a short DP-SGD run (:func:`dpreg.engines.run_dpsgd`), one
person's release in LDP-SGD (:class:`dpreg.LDPStream`) and full-batch DP-GD
(:func:`dpreg.engines.dpgd.run_dpgd`), each on a canary row and its neighbour."""

from __future__ import annotations

import math
import time

import numpy as np

from dpreg._checks import integer_at_least, positive_number
from dpreg.audit.bounds import MIN_RUNS, AuditReport, claimed_epsilons, epsilon_lower_bound
from dpreg.engines.dpsgd import SGDSettings, run_dpsgd
from dpreg.exceptions import OptionError
from dpreg.families import Objective, get_family, mallows_weights
from dpreg.privacy.events import GaussianMechanismEvent
from dpreg.privacy.gdp import calibrate_dpsgd, mu_to_epsilon

__all__ = ["audit_dpsgd", "audit_ldp_step", "audit_dpgd"]


def audit_dpsgd(mu=1.0, runs=2000, delta=1e-5, rng=None, *, n=50, p=2, batch_size=5,
                steps=100, sampling="uniform", clip=1.0, lr=1.0, lr_decay=0.0,
                statistic="average", neighbour=None, y_canary=1e6, noise_scale=1.0,
                alpha=0.05) -> AuditReport:
    """Audit a short DP-SGD run (:func:`dpreg.engines.run_dpsgd`, linear family).

    Parameters
    ----------
    mu : float
        Target GDP (central limit theorem) of the path: the noise multiplier is
        :func:`~dpreg.privacy.calibrate_dpsgd`'s, as in a fit with ``mu=``.
    runs : int
        Runs on each data set (one ``run_dpsgd`` call each; about 0.1 ms for the
        default sizes).
    delta : float
    rng : numpy.random.Generator, int or None
    n, p : int
        Rows and columns of the toy data.
    batch_size, steps : int
        m and T.
    sampling : {"uniform", "poisson"}
        Fixed-size batches (replace-one) or Poisson sampling (add/remove).
    clip, lr, lr_decay : float
        Clipping norm and step size ``lr * t^(-lr_decay)`` (constant by default).
    statistic : {"average", "last"}
        First coordinate of the averaged iterate (the estimate a fit releases) or of the
        last iterate.
    neighbour : {"opposite", "zero"}, optional
        ``D'`` replaces the canary ``(x, y) = (e_1, y_canary)`` by ``(e_1, -y_canary)``
        (its clipped gradient is the opposite: the replace-one sensitivity ``2 clip``) or
        by a zero row (the only choice, and the default, under Poisson sampling:
        removing the canary). Default ``"opposite"`` for uniform sampling.
    y_canary : float
        Large enough that the canary's gradient is always clipped.
    noise_scale : float
        Noise actually added as a multiple of the calibrated noise (``1``: correct).
    alpha : float

    Returns
    -------
    AuditReport

    Notes
    -----
    Every row but the canary is zero, so only the canary moves theta: each time it is
    sampled it pushes theta_1 by ``lr_t clip / m`` (up on ``D``, down on ``D'``), and
    every step adds Gaussian noise. The accountant charges for the *whole path* of T
    noisy gradients; the statistic sees only their weighted sum (the averaged iterate),
    which hides when the canary was sampled. The audit is therefore loose by design
    (Jagielski, Ullman and Oprea 2020 and Nasr et al. 2021 find the same for final-model
    audits); the rigorous RDP bound for uniform sampling is in addition about twice the
    CLT epsilon (:mod:`dpreg.privacy.accountants`).
    """
    mu = positive_number("mu", mu)
    runs = integer_at_least("runs", runs, MIN_RUNS)
    clip = positive_number("clip", clip)
    noise_scale = positive_number("noise_scale", noise_scale)
    if sampling not in ("uniform", "poisson"):
        raise OptionError(f"sampling must be 'uniform' or 'poisson'; got {sampling!r}")
    if neighbour is None:
        neighbour = "opposite" if sampling == "uniform" else "zero"
    if neighbour not in ("opposite", "zero"):
        raise OptionError(f"neighbour must be 'opposite' or 'zero'; got {neighbour!r}")
    if sampling == "poisson" and neighbour != "zero":
        raise OptionError("Poisson sampling is analysed under add/remove: the neighbour "
                          "must remove the canary (neighbour='zero')")
    if statistic not in ("average", "last"):
        raise OptionError(f"statistic must be 'average' or 'last'; got {statistic!r}")
    gen = np.random.default_rng(rng)
    t0 = time.perf_counter()
    adjacency = "replace-one" if sampling == "uniform" else "add/remove"
    sens = (2.0 if adjacency == "replace-one" else 1.0) * clip
    s = calibrate_dpsgd(mu, n, batch_size, steps, sampling=sampling)
    event = GaussianMechanismEvent(name="DP-SGD path", sensitivity=sens, noise_std=s * sens,
                                   adjacency=adjacency, sampling=sampling,
                                   sample_size=batch_size, population=n, count=steps)
    settings = SGDSettings(batch_size=batch_size, sampling=sampling, steps=steps, clip=clip,
                           lr=lr, lr_decay=lr_decay,
                           noise_scale=noise_scale * event.noise_std / batch_size,
                           noise_multiplier=event.noise_multiplier)
    X_d = np.zeros((n, p))
    X_d[0, 0] = 1.0
    y_d = np.zeros(n)
    y_d[0] = y_canary
    X_dp, y_dp = X_d.copy(), y_d.copy()
    if neighbour == "opposite":
        y_dp[0] = -y_canary
    else:
        X_dp[0, 0], y_dp[0] = 0.0, 0.0
    objective = Objective(get_family("linear"), np.inf, 0.5, np.ones(n), False)
    theta0 = np.zeros(p)

    def scores(X, y):
        out = np.empty(runs)
        for r in range(runs):
            res = run_dpsgd(X, y, objective=objective, settings=settings, theta0=theta0,
                            rng=gen)
            out[r] = (res.params if statistic == "average" else res.last)[0]
        return out

    result = epsilon_lower_bound(scores(X_d, y_d), scores(X_dp, y_dp), delta, alpha, rng=gen)
    eps, eps_gdp, accountant = claimed_epsilons(event, delta)
    return AuditReport(
        mechanism=f"DP-SGD ({statistic} iterate, {sampling}, n={n}, m={batch_size}, "
                  f"T={steps})",
        result=result, epsilon_claimed=eps, epsilon_gdp=eps_gdp, accountant=accountant,
        mu=event.mu(), epsilon_pair=None, event=event, seconds=time.perf_counter() - t0,
        settings={"n": n, "p": p, "batch_size": batch_size, "steps": steps,
                  "sampling": sampling, "clip": clip, "lr": lr, "lr_decay": lr_decay,
                  "statistic": statistic, "neighbour": neighbour,
                  "noise_multiplier": event.noise_multiplier, "noise_scale": noise_scale,
                  "alpha": alpha})


def audit_ldp_step(mu=1.0, runs=100_000, delta=1e-5, rng=None, *, family="huber",
                   noise_scale=1.0, alpha=0.05) -> AuditReport:
    """Audit one person's release in LDP-SGD, calibrated by :class:`dpreg.LDPStream`.

    Parameters
    ----------
    mu : float
        The stream's budget (all on the local path).
    runs : int
        Releases per data set: ``runs`` people with the canary row, ``runs`` with its
        neighbour, each seen once by one stream.
    delta : float
    rng : numpy.random.Generator, int or None
    family : {"huber", "logistic", "expectile"}
        Family (with its Mallows weights and gradient bound ``B0``).
    noise_scale : float
        Noise actually added as a multiple of the calibrated ``2 B0 / mu``.
    alpha : float

    Returns
    -------
    AuditReport

    Notes
    -----
    The server sees, from person ``i``, the noisy gradient ``g_i + (2 B0/mu) xi_i``,
    which it can read off the path as ``(theta_{i-1} - theta_i) / gamma_i``. The canary
    row ``x = (1, 1)`` (intercept and ``x1 = 1``: ``||x||^2 = 2``, Mallows weight 1,
    ``w ||x|| = sqrt(2)``) with ``y = 1e9`` has a residual beyond ``c``, so its gradient
    is ``-c x``, of norm ``B0 = sqrt(2) c``; the neighbour ``y = -1e9`` has ``+c x``:
    the replace-one sensitivity ``2 B0`` in full. The statistic is the recovered
    release projected on ``x``: the likelihood ratio for two Gaussians, so a correct
    mechanism is audited tightly (``epsilon_pair`` is the exact epsilon between the two
    release distributions). For the logistic family no row attains the bound ``B0``
    (the score ``|y - p|`` is below 1 at any finite index), nor does an expectile pair
    with ``tau != 0.5`` reach ``2 B0``: their audits are loose by construction.
    """
    import pandas as pd

    from dpreg.frontend.stream import LDPStream

    mu = positive_number("mu", mu)
    runs = integer_at_least("runs", runs, MIN_RUNS)
    noise_scale = positive_number("noise_scale", noise_scale)
    gen = np.random.default_rng(rng)
    t0 = time.perf_counter()
    # ||x||^2 = 2 puts the Mallows weight at 1 and w ||x|| at sqrt(2): the bound B0
    x = np.array([[1.0, 1.0]])
    first = pd.DataFrame({"y": [0.0], "x1": [1.0]})

    def releases(y_value):
        stream = LDPStream("y ~ x1", family=family, mu=mu, random_state=gen,
                           x_bound=math.sqrt(2))
        stream.partial_fit(first)  # sets up calibration, ledger and path (public row)
        run = stream._run
        event = run.ledger.events[0]
        path = run.path
        object.__setattr__(path, "settings", type(path.settings)(
            **{**path.settings.__dict__, "noise_scale": noise_scale * event.noise_std}))
        y = np.array([y_value])
        direction = x[0] / np.linalg.norm(x[0])
        out = np.empty(runs)
        for r in range(runs):
            before = path._theta @ direction
            t = path.nobs + 1
            path.update(x, y, mallows_weights(x))
            step = path.settings.lr * t ** -path.settings.lr_decay
            out[r] = (before - path._theta @ direction) / step  # the release, projected
        return out, event

    # far beyond any drift of the path (|x.theta| grows like sum gamma_t ~ 1e3 at 1e6 rows):
    # the canary stays in the clipped zone, at the full sensitivity, for every person
    fam = get_family(family)
    binary = fam.binary_outcome
    # the pair attains the full sensitivity 2 B0 when the score is +-c on either side:
    # a truncation constant without an expectile's asymmetry (Huber)
    attained = fam.default_c is not None and not fam.uses_tau and not binary
    y_big = 1.0 if binary else 1e9
    scores_d, event = releases(y_big)
    scores_dp, _ = releases(0.0 if binary else -y_big)
    result = epsilon_lower_bound(-scores_d, -scores_dp, delta, alpha, rng=gen)
    eps, eps_gdp, accountant = claimed_epsilons(event, delta)
    return AuditReport(
        mechanism=f"LDP-SGD: one person's release ({family}, local, replace-one)",
        result=result, epsilon_claimed=eps, epsilon_gdp=eps_gdp, accountant=accountant,
        # for Huber the canary pair is at the full sensitivity: shift / noise = mu
        mu=event.mu(), epsilon_pair=(float(mu_to_epsilon(event.mu() / noise_scale, delta))
                                     if attained else None),
        event=event, seconds=time.perf_counter() - t0,
        settings={"family": family, "noise_scale": noise_scale, "alpha": alpha,
                  "B0": event.sensitivity / 2})


def audit_dpgd(mu=1.0, runs=20_000, delta=1e-5, rng=None, *, n=20, p=2, steps=50,
               clip=1.0, lr=0.5, statistic="last", noise_scale=1.0,
               alpha=0.05) -> AuditReport:
    """Audit full-batch DP-GD (:func:`dpreg.engines.dpgd.run_dpgd`, linear family).

    Parameters
    ----------
    mu : float
        Budget of the path; the noise on the mean gradient is
        ``lambda = sqrt(T) (2 clip / n) / mu``, the calibration of
        ``fit(engine="dpgd")`` (Lemma 2.1 of the dpgd paper in GDP form).
    runs : int
        Runs on each data set (one vectorized ``run_dpgd`` call per data set).
    delta : float
    rng : numpy.random.Generator, int or None
    n, p, steps : int
        Rows, columns and T of the toy problem.
    clip, lr : float
        ``gamma`` and ``eta``.
    statistic : {"last", "mean"}
        First coordinate of the last iterate, or of the mean of the iterates.
    noise_scale : float
        Noise actually added as a multiple of the calibrated ``lambda``.
    alpha : float

    Returns
    -------
    AuditReport

    Notes
    -----
    All rows are zero but the canary ``(e_1, +1e6)`` (``D``) or ``(e_1, -1e6)``
    (``D'``), whose gradient is clipped to ``-/+ clip e_1`` at every step: the
    replace-one sensitivity ``2 clip / n`` of the mean, every step. Zero rows have zero
    gradient, so ``theta_T`` is the start minus ``eta`` times the sum of all T noisy mean
    gradients: a sufficient statistic, and the audit of the last iterate is as tight as
    the Gaussian mechanism's (the claimed epsilon is exact for T composed Gaussians).
    """
    from dpreg.engines.dpgd import GDSettings, run_dpgd

    mu = positive_number("mu", mu)
    runs = integer_at_least("runs", runs, MIN_RUNS)
    clip = positive_number("clip", clip)
    noise_scale = positive_number("noise_scale", noise_scale)
    if statistic not in ("last", "mean"):
        raise OptionError(f"statistic must be 'last' or 'mean'; got {statistic!r}")
    gen = np.random.default_rng(rng)
    t0 = time.perf_counter()
    sens = 2.0 * clip / n
    event = GaussianMechanismEvent(name="DP-GD path", sensitivity=sens,
                                   noise_std=math.sqrt(steps) * sens / mu,
                                   adjacency="replace-one", count=steps)
    settings = GDSettings(steps=steps, clip=clip, lr=lr,
                          noise_std=noise_scale * event.noise_std, runs=runs)
    objective = Objective(get_family("linear"), np.inf, 0.5, np.ones(n), False)

    def scores(y_canary):
        X = np.zeros((n, p))
        X[0, 0] = 1.0
        y = np.zeros(n)
        y[0] = y_canary
        paths = run_dpgd(X, y, objective=objective, settings=settings,
                         theta0=np.zeros(p), rng=gen).paths
        return paths[:, -1, 0] if statistic == "last" else paths[:, 1:, 0].mean(axis=1)

    result = epsilon_lower_bound(scores(1e6), scores(-1e6), delta, alpha, rng=gen)
    eps, eps_gdp, accountant = claimed_epsilons(event, delta)
    return AuditReport(
        mechanism=f"DP-GD ({statistic} iterate, n={n}, T={steps})", result=result,
        epsilon_claimed=eps, epsilon_gdp=eps_gdp, accountant=accountant, mu=event.mu(),
        epsilon_pair=float(mu_to_epsilon(event.mu() / noise_scale, delta)),
        event=event, seconds=time.perf_counter() - t0,
        settings={"n": n, "p": p, "steps": steps, "clip": clip, "lr": lr,
                  "statistic": statistic, "noise_scale": noise_scale, "alpha": alpha})
