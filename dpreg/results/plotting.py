"""Trajectory pictures: each coefficient's running estimate with its intervals against
the number of rows used (ldp-sgd paper, Figures 2, 4 and 5).

Everything drawn is post-processing of the released path: running averages recorded at
a geometric grid of steps, the random-scaling diagonal at those steps, batch means
recomputed on each prefix, and the plug-in covariance as released (scaled by ``1/t``).
"""

from __future__ import annotations

import numpy as np

from dpreg.exceptions import OptionError
from dpreg.inference.base import NormalLaw
from dpreg.inference.batch_means import (
    batch_means_covariance,
    batch_means_critical_value,
    default_n_batches,
)
from dpreg.inference.pivot import rs_pivot

__all__ = ["trajectory_bands", "plot_trajectory"]

_STYLE = {"plugin": ("PPI", "tab:blue"), "batch_means": ("PBM", "tab:green"),
          "rs": ("PRS", "tab:red")}
MAX_POINTS = 150


def trajectory_bands(trajectory: dict, alpha: float = 0.05, start: float = 0.005,
                     methods=None) -> dict:
    """Steps, running estimates and half-widths of each method's intervals.

    Parameters
    ----------
    trajectory : dict
        ``results.trajectory`` of an LDP-SGD fit (or of DP-SGD: estimates only).
    alpha : float
        Intervals at level ``1 - alpha``.
    start : float
        Leave out the first ``start * n`` rows (the unstable start of the path).
    methods : list of str, optional
        Subset of ``"plugin"``, ``"batch_means"``, ``"rs"`` (default: all available).

    Returns
    -------
    dict with ``steps`` (K,), ``estimate`` (K, p) and ``half_width``: ``{method: (K, p)}``.
    """
    steps = np.asarray(trajectory["steps"])
    avg = np.asarray(trajectory["average"])
    keep = np.flatnonzero(steps >= max(2, start * steps[-1]))
    if len(keep) > MAX_POINTS:
        keep = keep[np.unique(np.linspace(0, len(keep) - 1, MAX_POINTS).round().astype(int))]
    out = {"steps": steps[keep], "estimate": avg[keep], "half_width": {}}
    available = []
    if "rs_q_diag" in trajectory:
        available += ["rs", "batch_means"]
    if trajectory.get("plugin_cov") is not None:
        available.append("plugin")
    methods = available if methods is None else list(methods)
    unknown = [m for m in methods if m not in available]
    if unknown:
        raise OptionError(f"no trajectory for {unknown}; available: {available}")
    t = steps[keep].astype(float)[:, None]
    if "rs" in methods:
        q = np.asarray(trajectory["rs_q_diag"])[keep]
        out["half_width"]["rs"] = rs_pivot.critical_value(alpha) * np.sqrt(q)
    if "plugin" in methods:
        diag = np.diag(trajectory["plugin_cov"])[None, :]
        out["half_width"]["plugin"] = NormalLaw().critical_value(alpha) * np.sqrt(diag / t)
    if "batch_means" in methods:
        hw = np.full_like(out["estimate"], np.nan)
        for r, k in enumerate(keep):
            n_k = int(steps[k])
            try:
                sigma, used = batch_means_covariance(steps[:k + 1], avg[:k + 1],
                                                  default_n_batches(n_k),
                                                  trajectory["lr_decay"])
            except OptionError:
                continue  # too few steps for batches yet
            hw[r] = batch_means_critical_value(used, alpha) * np.sqrt(
                np.clip(np.diag(sigma), 0, None) / n_k)
        out["half_width"]["batch_means"] = hw
    return out


def plot_trajectory(results, *, alpha: float = 0.05, methods=None, start: float = 0.005,
                    truth=None, path=None, show: bool = False):
    """Draw each coefficient's running estimate and intervals against rows used.

    Parameters
    ----------
    results : DPRegressionResults
        A fit whose ``trajectory`` was recorded (LDP-SGD: with bands; DP-SGD: the
        running average and the iterate only).
    alpha : float
        Intervals at level ``1 - alpha``.
    methods : list of str, optional
        Which intervals (``"plugin"``, ``"batch_means"``, ``"rs"``); default all.
    start : float
        Share of the path left out at the start.
    truth : array-like, optional
        True coefficients (simulations), drawn as dotted lines.
    path : str or path-like, optional
        Save the figure there (format from the suffix).
    show : bool
        Call ``matplotlib.pyplot.show()``.

    Returns
    -------
    matplotlib.figure.Figure
    """
    try:
        import matplotlib
        if path is not None and not show:
            matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt
    except ImportError:
        raise OptionError("plotting needs matplotlib: pip install 'dpreg[plot]'") from None
    traj = results.trajectory
    if not traj:
        raise OptionError("this fit has no recorded trajectory")
    names = list(results.params.index)
    p = len(names)
    ncol = min(p, 3)
    nrow = -(-p // ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(4.2 * ncol, 3.2 * nrow), squeeze=False)
    if "rs_q_diag" in traj:
        bands = trajectory_bands(traj, alpha, start, methods)
        steps, est = bands["steps"], bands["estimate"]
        lines = {"estimate": est}
    else:
        steps = np.asarray(traj["steps"])
        lines = {"running average": np.asarray(traj["average"]),
                 "iterate": np.asarray(traj["iterate"])}
        bands = {"half_width": {}}
    for j in range(p):
        ax = axes[j // ncol][j % ncol]
        for label, values in lines.items():
            ax.plot(steps, values[:, j], color="black" if label != "iterate" else "0.6",
                    lw=1.2 if label != "iterate" else 0.6, label=label)
        for method, hw in bands["half_width"].items():
            name, color = _STYLE[method]
            est = lines["estimate"][:, j]
            ax.plot(steps, est - hw[:, j], color=color, lw=0.9, ls="--", label=name)
            ax.plot(steps, est + hw[:, j], color=color, lw=0.9, ls="--")
        if truth is not None:
            ax.axhline(np.asarray(truth, dtype=float)[j], color="0.4", lw=0.8, ls=":")
        ax.set_title(names[j])
        ax.set_xlabel("rows used" if "rs_q_diag" in traj else "step")
    for k in range(p, nrow * ncol):
        axes[k // ncol][k % ncol].set_visible(False)
    axes[0][0].legend(fontsize="small", frameon=False)
    level = f"{100 * (1 - alpha):g}%"
    fig.suptitle(f"{results.engine}: running estimates with {level} intervals"
                 if bands["half_width"] else f"{results.engine}: running estimates")
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=120)
    if show:
        plt.show()
    return fig
