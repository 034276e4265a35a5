"""Recorded runs that cannot go stale: the defaults a run was produced under, and a check.

The figures the docs quote come from recorded runs: the study runs in
``docs/studies/results/*-run.json`` (``python -m dpreg study NAME``) and the files of
``validation/results/`` (the ``validation/*.py`` scripts). Each records the public
defaults its numbers were produced under: :func:`defaults_fingerprint`, a flat mapping
from a default's name to its value as text, is written into a study's run record (its
``"defaults"`` entry) and, for a validation file, into the manifest
``validation/results/DEFAULTS.json`` (:func:`stamp_validation_results`, or ``python -m
dpreg defaults stamp FILE --command CMD``).

:func:`stale_runs` compares every recorded run with the current defaults, and
:func:`check_recorded_runs` raises :class:`StaleRunError` naming each stale run, the
defaults that changed (then and now) and the command that reruns it. The docs build
runs the check (``docs/conf.py``, on ``builder-inited``), and so do the tests
(``tests/studies/test_defaults.py``) and ``python -m dpreg defaults check``.

What counts as a default (:data:`CONSTANTS` and the options below): the default of every
field of every engine's options record (:data:`dpreg.fits.registry.ENGINES`, and
:class:`dpreg.fits.iv.IVOptions`), the engine's default interval method and whether the
default ``ranges="auto"`` learns its ranges; the keyword defaults of the front ends; and
the module constants that set defaults (budget shares, diagnostic thresholds, the
private ranges' share and bins, the engines' schedules and the rule of
``engine="auto"``). Defaults written as logic rather than values count through the
values they read.

A run is stale when a default it recorded has another value now or is gone, or when a
default was added after it (``ranges="auto"`` and ``SSP_FLOOR_SENSITIVITY`` each came
as a new name and changed numbers), unless :data:`NEUTRAL` lists the new name with the
reason its addition kept every earlier number (or :data:`NEUTRAL_EXCEPT` does, for every
run but those it names). A constant that only a message quotes (:data:`QUOTED`) never
makes a run stale. A run that records no defaults is
stale: nothing shows it is current.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import inspect
import json
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Mapping

__all__ = ["CONSTANTS", "DPSGD_WARNING_RUNS", "FRONT_ENDS", "LEARNED_RANGES_RUNS", "NEUTRAL",
           "NEUTRAL_EXCEPT",
           "NEUTRAL_PREFIXES", "QUOTED",
           "STUDY_RUNS", "VALIDATION_RESULTS", "MANIFEST",
           "StaleRun", "StaleRunError", "defaults_fingerprint", "stale_runs",
           "check_recorded_runs", "recorded_runs_page", "stamp_validation_results"]

#: Module constants that set defaults, by module (a value of ``None``: every constant of
#: the module whose name is upper case and whose value is a number).
CONSTANTS: dict[str, tuple[str, ...] | None] = {
    "dpreg.fits.options": ("DEFAULT_BUDGET_SPLIT",),
    "dpreg.fits.common": ("RANGES_STREAM", "START_INTERCEPT", "SKEWED_CLIP_MIN_N_MU"),
    "dpreg.fits.dpsgd": ("PRECONDITIONED_SPLIT", "STEP_OPTIONS"),
    "dpreg.fits.dpgd": ("PRECONDITIONED_GD_SPLIT", "CURVED_GD_STEP"),
    "dpreg.fits.ldp_sgd": ("LDP_PLUGIN_SPLIT", "LINEAR_LDP_LR", "BOXED_LDP_LR",
                           "MIXING_SHARE"),
    "dpreg.fits.ssp": ("DEFAULT_SPLIT", "ROBUST_SPLIT"),
    "dpreg.fits.iv": ("DEFAULT_SPLIT", "WEAK_F"),
    "dpreg.fits.engine_choice": ("DEFAULT_ENGINE", "STATISTICS_ENGINES", "FALLBACK_ENGINES",
                                 "NEWTON_MIN_N_MU", "NEWTON_MAX_P", "NEWTON_WIDE_MIN_N_MU",
                                 "NEWTON_WIDE_MAX_P", "NEWTON_MIN_RATE_N_MU"),
    "dpreg.fits._engine_choice_table": ("RULES",),
    "dpreg.engines.dpsgd": ("DEFAULT_WORK", "ROWS_PER_BATCH", "MIN_STEPS"),
    "dpreg.engines.dpgd": ("MIXING_MULTIPLE",),
    "dpreg.engines.adassp": ("FAILURE_PROB",),
    "dpreg.engines.newton": ("STEPS", "HESSIAN_AT", "LOCATION_HESSIAN_AT",
                             "WEIGHTED_HESSIAN_AT", "SHARES"),
    "dpreg.fits.newton": ("LAST_STEP_LIMIT",),
    "dpreg.inference.ssp_estimator": ("FAILURE_PROB",),
    "dpreg.inference.diagnostics": None,
    "dpreg.privacy.ranges": ("DEFAULT_RANGES_SHARE", "DEFAULT_BINS", "THRESHOLD",
                             "GUARD_BINS", "GUARD_PER_NOISE", "ISOLATED_GAP",
                             "LONE_BIN_RATE", "LONE_BIN_SUM_Z", "SKEWED_TAIL",
                             "TAIL_RESOLVED", "MIN_TAIL_BINS"),
}
#: The front ends whose keyword defaults count (``module:qualified name``).
FRONT_ENDS = ("dpreg.frontend.api:dp_ols", "dpreg.frontend.api:dp_huber",
              "dpreg.frontend.api:dp_expectile", "dpreg.frontend.api:dp_logit",
              "dpreg.frontend.api:dp_iv2sls", "dpreg.frontend.model:DPRegression.fit",
              "dpreg.frontend.stream:LDPStream.__init__")
#: Defaults added after some recorded runs whose addition kept every earlier number, and
#: why: a run that lacks one of these names is not stale for it. A new option goes here
#: only when its default reproduces what the fits did before it existed.
NEUTRAL = {
    "dpsgd.groups": "None: rows stay the privacy unit, as before clusters (issue 29)",
    "dpsgd.max_group_size": "None: only used with groups=",
    "ssp.groups": "None: rows stay the privacy unit, as before clusters",
    "ssp.max_group_size": "None: only used with groups=",
    "ssp.absorb": "None: no fixed effects absorbed, as before absorb=",
    "privacy.ranges.SKEWED_TAIL": "when the summary notes a long-tailed outcome; a note, "
                                  "it decides no number or warning",
    "privacy.ranges.TAIL_RESOLVED": "when the long-tail note reads the tail quantiles; a "
                                    "note, it decides no number or warning",
    "privacy.ranges.MIN_TAIL_BINS": "when the long-tail note sees a tail; a note, it "
                                    "decides no number or warning",
}
#: Constants that only a message's text quotes (a measured number, remeasured as the
#: package changes): neither their addition nor a new value makes a run stale, since they
#: decide no fit, number or warning.
QUOTED = {
    "inference.diagnostics.FLOOR_RS_COVERAGE": "a measured coverage that the floor "
                                               "warning's text quotes",
    "inference.diagnostics.PLUGIN_LONG_COVERAGE": "a measured coverage that the long "
                                                  "plug-in's note quotes",
    "inference.diagnostics.FLOOR_NOTE_COVERAGE": "a measured coverage that the floor "
                                                 "check's note quotes",
}
#: The recorded runs that report DP-SGD fits' warnings or default intervals: a default
#: that changes only which DP-SGD fits warn (or switch their default) stales these.
DPSGD_WARNING_RUNS = ("budget_split.csv", "clustered_analysis.txt", "clusters.csv",
         "curvature_correction.txt", "dpsgd_coverage_n1000_r500.csv",
         "dpsgd_floor_check.csv", "dpsgd_floor_check_cells.csv",
         "dpsgd_floor_check_budget.csv", "dpsgd_schedule.txt", "dpsgd_vs_dpgd.csv",
         "engines.csv", "engines-shortest.csv", "engines-ranges.csv",
         "engines-ranges-shortest.csv", "engines-families.csv",
         "engines-families-shortest.csv", "engines_real_data.txt",
         "families_coverage_n1000_r300.csv", "families_coverage_lr_1_over_kappa.txt",
         "floor_bootstrap_interval.csv", "heteroskedastic_intervals.txt",
         "joint_test_size.txt", "newton_logit.txt", "newton_logit_mallows.txt",
         "newton_logit_rate.txt",
         "prediction_intervals.csv", "private_ranges.csv", "private_ranges.txt",
         "real_data.csv", "robustness.csv",
         "robustness-ranges.csv", "skewed_outcome.txt", "skewed_outcome_skewed_clip.txt",
         "skewed_outcome_note.txt", "square_coordinates.txt", "statsmodels_datasets.csv",
         "textbook.csv", "textbook-default.csv", "textbook-warnings.csv")
#: The recorded runs that fit with ranges learned privately (``ranges="auto"`` or
#: ``"private"`` with DP-SGD, SSP or noisy Newton and declared bounds): a default that
#: changes only how the private ranges are read stales these. The others fit LDP-SGD,
#: DP-GD, AdaSSP or IV-2SLS, clusters (declared boxes), or designs without declared
#: bounds (the papers' studies, families_coverage, dpsgd_vs_dpgd).
LEARNED_RANGES_RUNS = tuple(sorted(
    set(DPSGD_WARNING_RUNS) - {"clustered_analysis.txt", "clusters.csv", "dpsgd_vs_dpgd.csv",
                               "families_coverage_n1000_r300.csv",
                               "families_coverage_lr_1_over_kappa.txt"}
    | {"dpsgd_floor_check_alone.csv", "dpsgd_floor_check_cap.csv", "huber_natural_units.csv",
       "newton_location.txt", "outcome_range_bias.txt", "plugin_long_note.csv",
       "prediction_intervals_approval.csv", "range_lone_bins.csv",
       "robustness-ranges-warnings.csv", "robustness-warnings.csv", "scale_box.csv",
       "sensitivity_grid.csv", "ssp_coverage.csv", "ssp_coverage_by_floor.csv",
       "ssp_floor_check.csv", "ssp_floor_check_real.csv", "ssp_splits.csv"}))
_LONE_BIN_RULE = ("the private ranges' reading passes over a lone noise bin before "
                  "an end (dpreg.privacy.ranges.range_start): it changes the ranges "
                  "learned where the tail rows allowed are fewer than about two noise sd "
                  "(small n mu), and so the fits on them; the runs listed learn ranges")
#: Defaults added after some recorded runs that change the numbers of some runs only: the
#: name is neutral (as in :data:`NEUTRAL`, for the reason given) for every run but the
#: ones listed (file names of recorded runs), which read it and so are stale for it; a
#: new value of it likewise stales only the runs listed.
NEUTRAL_EXCEPT = {
    "inference.diagnostics.CURVATURE_CORRECTED_LIMIT": (
        "the curvature correction of logistic DP-SGD estimates (with the private "
        "preconditioner, the default; rows as the privacy unit) and its flag: read by "
        "those fits only; the runs listed have such fits",
        ("budget_split.csv", "dpsgd_floor_check.csv", "dpsgd_floor_check_budget.csv",
         "newton_logit_mallows.txt", "newton_logit_rate.txt", "engines-families.csv",
         "engines-families-shortest.csv",
         "families_coverage_n1000_r300.csv", "families_coverage_lr_1_over_kappa.txt",
         "floor_bootstrap_interval.csv", "newton_logit.txt", "prediction_intervals.csv",
         "real_data.csv", "robustness.csv", "robustness-ranges.csv",
         "statsmodels_datasets.csv", "textbook.csv", "textbook-default.csv",
         "textbook-warnings.csv", "curvature_correction.txt", "curvature_oracle.txt",
         "curvature_oracle_rs_rule.txt",
         "dpsgd_floor_check_alone.csv",
         "dpsgd_floor_check_cap.csv", "dpsgd_floor_check_cells.csv",
         "prediction_intervals_approval.csv")),
    "inference.diagnostics.CURVATURE_PREDICTION_LIMIT": (
        "the flag of a prediction whose linear index the curvature correction of a "
        "logistic DP-SGD fit moved far (PredictionResults.flagged, and a warning from "
        "get_prediction): it changes no fit, estimate or interval; the runs listed "
        "report predictions of such fits by their flag",
        ("prediction_intervals.csv", "prediction_intervals_approval.csv")),
    "inference.diagnostics.FLOOR_RS_RATIO": (
        "the gate of DP-SGD's eigenvalue-floor check (a floor-sensitive coefficient is "
        "flagged only when random scaling finds its plug-in short): it changes which "
        "DP-SGD fits warn and which switch their default interval to random scaling, and "
        "nothing else (every release, estimate and method's interval is the same); the "
        "runs listed report DP-SGD fits' warnings or default intervals",
        DPSGD_WARNING_RUNS),
    "inference.diagnostics.FLOOR_NOTE_MIN_N_MU": (
        "DP-SGD's default interval where the eigenvalue-floor check names coefficients "
        "became the plug-in's with random scaling's for those ('plugin_rs', it was random "
        "scaling's for every coefficient), and the finding alone is a note from this n mu "
        "at the learned ranges: it changes which DP-SGD fits warn and the default "
        "intervals of the fits the check names (every release, estimate and method's "
        "interval is the same); the runs listed report DP-SGD fits' warnings or default "
        "intervals",
        DPSGD_WARNING_RUNS),
    "privacy.ranges.ISOLATED_GAP": (_LONE_BIN_RULE, LEARNED_RANGES_RUNS),
    "privacy.ranges.LONE_BIN_RATE": (_LONE_BIN_RULE, LEARNED_RANGES_RUNS),
    "privacy.ranges.LONE_BIN_SUM_Z": (_LONE_BIN_RULE, LEARNED_RANGES_RUNS),
    "fits.dpsgd.STEP_OPTIONS": (
        "the options whose defaults make a DP-SGD fit's plug-in over 2.5 times random "
        "scaling's a note instead of a warning (the default step rule on the private "
        "preconditioner): it changes which DP-SGD fits warn and nothing else (every "
        "release, estimate, default interval and method's interval is the same); the runs "
        "listed report DP-SGD fits' warnings",
        DPSGD_WARNING_RUNS),
    "fits.engine_choice.NEWTON_MIN_N_MU": (
        "the default engine of logistic, Huber and expectile regression is noisy Newton "
        "at n mu >= this (p <= NEWTON_MAX_P, learned ranges, no option it lacks); every "
        "other recorded run fits these families with an engine given, at n mu below it, "
        "with p above NEWTON_MAX_P, or with an option noisy Newton does not take; the "
        "runs listed fit default ones above it",
        ("statsmodels_datasets.csv", "newton_logit.txt", "huber_natural_units.csv")),
    "fits.engine_choice.NEWTON_MAX_P": (
        "the most columns the Newton rule takes at NEWTON_MIN_N_MU (see NEWTON_MIN_N_MU)",
        ("statsmodels_datasets.csv", "newton_logit.txt", "huber_natural_units.csv")),
    "fits.engine_choice.NEWTON_WIDE_MIN_N_MU": (
        "the n mu from which the Newton rule takes models of NEWTON_MAX_P + 1 to "
        "NEWTON_WIDE_MAX_P columns; the runs listed fit such default logistic, Huber or "
        "expectile models above it (randhie's Huber, p = 10; fair's, p = 9, at mu = 10); "
        "every other run's are narrower, wider, below it or have their engine given",
        ("statsmodels_datasets.csv", "real_data.csv")),
    "fits.engine_choice.NEWTON_MIN_RATE_N_MU": (
        "a default logit that meets the Newton rule counts its outcome's zeros and ones "
        "with the ranges' histograms and keeps noisy Newton only where n mu r (1 - r) is "
        "at least this (else DP-SGD): the runs listed have such default logits (fair's, "
        "at mu 5 and 10); every other run's logits name their engine or are below the "
        "rule",
        ("statsmodels_datasets.csv",)),
    "fits.engine_choice.NEWTON_WIDE_MAX_P": (
        "the most columns the Newton rule takes at NEWTON_WIDE_MIN_N_MU (see it)",
        ("statsmodels_datasets.csv", "real_data.csv")),
    "engines.newton.LOCATION_HESSIAN_AT": (
        "a third Hessian, at the last step, for noisy Newton's Huber and expectile fits "
        "(their covariance's Hessian at the estimate); logistic fits are as before; the "
        "runs listed have Huber or expectile fits by noisy Newton",
        ("newton_location.txt", "statsmodels_datasets.csv", "real_data.csv",
         "huber_natural_units.csv")),
    "engines.newton.WEIGHTED_HESSIAN_AT": (
        "a third Hessian, at the last step, for noisy Newton's logistic fits with Mallows "
        "weights; no recorded run before it had such fits",
        ()),
    "fits.newton.LAST_STEP_LIMIT": (
        "noisy Newton's warning when its last step moved a coefficient by more than this "
        "many standard errors: it changes which noisy Newton fits warn and nothing else; "
        "the runs listed have noisy Newton fits",
        ("newton_location.txt", "newton_logit.txt", "statsmodels_datasets.csv",
         "real_data.csv", "huber_natural_units.csv")),
    "fits.common.SKEWED_CLIP_MIN_N_MU": (
        "DP-SGD's clip for a long-tailed outcome (the tail note of its released "
        "histogram, linear regression and expectiles with c=inf) at n mu >= this; the "
        "note fires in no fit at n mu >= 30,000 of the textbook study's designs "
        "(skewed_outcome_note.txt), and the other runs' outcomes are symmetric, bounded "
        "or fitted by SSP, DP-GD, LDP-SGD or in declared boxes; the runs listed fit "
        "long-tailed outcomes by DP-SGD above it (randhie's visits, simulated visits)",
        ("skewed_outcome.txt", "statsmodels_datasets.csv")),
}
#: Prefixes of defaults added with a front end or estimator that no earlier run used: a
#: run that lacks them is not stale for them (its fits never read them).
NEUTRAL_PREFIXES = {
    "dp_iv2sls(": "the IV front end came later; the other front ends do not read it",
    "iv2sls.": "IV-2SLS's options came later; the other engines do not read them",
    "fits.iv.": "IV-2SLS's budget split and weak-instrument threshold, read by IV only",
    "newton.": "noisy Newton's options came later (engine='newton'); no earlier run fits it",
    "engines.newton.": "noisy Newton's steps and budget split, read by engine='newton' only",
}
#: Where the recorded runs are, relative to the repository.
STUDY_RUNS = "docs/studies/results/*-run.json"
VALIDATION_RESULTS = ("validation/results/*.csv", "validation/results/*.txt")
MANIFEST = "validation/results/DEFAULTS.json"
#: Values longer than this are recorded by their hash (the engine rule's table).
_LONGEST = 120


def _text(value: Any) -> str:
    """A default's value as text: its ``repr``, or a hash of it when long."""
    text = repr(value)
    if len(text) > _LONGEST:
        return "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:16]
    return text


def _field_defaults(options: type) -> dict[str, Any]:
    out = {}
    for f in dataclasses.fields(options):
        if f.default is not dataclasses.MISSING:
            out[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            out[f.name] = f.default_factory()
    return out


def _attribute(path: str):
    module, _, qualname = path.partition(":")
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def defaults_fingerprint() -> dict[str, str]:
    """The public defaults recorded numbers depend on, by name, as text.

    Returns
    -------
    dict
        Sorted by name: ``"<engine>.<option>"`` (each engine's options record, and
        ``"iv2sls.<option>"``), ``"<engine>.default_cov_type"`` (the first of its
        interval methods), ``"<engine>.learns_ranges"`` (whether the default
        ``ranges="auto"`` learns them), ``"<front end>(<keyword>)"`` and
        ``"<module>.<CONSTANT>"``
        (:data:`CONSTANTS`, the module without ``dpreg.``). Values are ``repr`` texts,
        or ``sha256:`` and 16 hex digits of it for values over 120 characters.
    """
    from dpreg.fits.iv import IVOptions
    from dpreg.fits.registry import ENGINES

    out: dict[str, str] = {}
    records = {name: engine.options for name, engine in ENGINES.items()}
    records["iv2sls"] = IVOptions
    for name, options in records.items():
        for field, value in _field_defaults(options).items():
            out[f"{name}.{field}"] = _text(value)
        if getattr(options, "cov_types", None):  # the first is the default cov_type
            out[f"{name}.default_cov_type"] = _text(options.cov_types[0])
        if name in ENGINES:  # whether ranges="auto" (the default) learns the ranges
            out[f"{name}.learns_ranges"] = _text(ENGINES[name].learns_ranges)
    for path in FRONT_ENDS:
        func = _attribute(path)
        label = path.partition(":")[2].replace(".__init__", "")
        for param in inspect.signature(func).parameters.values():
            if param.default is not inspect.Parameter.empty:
                out[f"{label}({param.name})"] = _text(param.default)
    for module, names in CONSTANTS.items():
        mod = importlib.import_module(module)
        if names is None:
            names = tuple(n for n, v in vars(mod).items() if n.isupper()
                          and isinstance(v, (int, float)) and not isinstance(v, bool))
        short = module.removeprefix("dpreg.")
        for name in names:
            out[f"{short}.{name}"] = _text(getattr(mod, name))
    return dict(sorted(out.items()))


@dataclass(frozen=True)
class StaleRun:
    """A recorded run whose defaults are not today's.

    Attributes
    ----------
    path : str
        The run record or result file, relative to the repository.
    command : str
        The command that reruns it.
    changed : dict
        ``{name: (value then, value now)}``; ``now`` is ``None`` for a default that is
        gone, ``then`` for one added since (not in :data:`NEUTRAL`). Empty when the run
        records no defaults.
    reason : str
        Why, in words.
    acknowledged : str or None
        The manifest's reason why the docs still quote it, or ``None``.
    """

    path: str
    command: str
    changed: Mapping[str, tuple[str, str | None]]
    reason: str
    acknowledged: str | None = None

    def describe(self, most: int | None = 4) -> str:
        """Several lines: the run, why it is stale, and the command that reruns it.

        Parameters
        ----------
        most : int or None
            Show at most this many changed defaults (``None``: all).

        Returns
        -------
        str
        """
        lines = [f"{self.path}: {self.reason}"]
        # values that changed or went first, then the defaults added since
        items = sorted(self.changed.items(), key=lambda kv: (kv[1][0] is None, kv[0]))
        shown = items if most is None else items[:most]
        lines += [f"    {name}: {'(absent)' if then is None else then} -> "
                  f"{'(gone)' if now is None else now}" for name, (then, now) in shown]
        if len(shown) < len(items):
            lines.append(f"    ... and {len(items) - len(shown)} more (python -m dpreg "
                         "defaults check --all)")
        lines.append(f"    rerun: {self.command}")
        return "\n".join(lines)


class StaleRunError(RuntimeError):
    """A recorded run that the docs quote is older than a change of its defaults."""


def _neutral_for(name: str, run: str | None) -> bool:
    """Whether a default added after a run leaves that run's numbers as they were."""
    if name in NEUTRAL_EXCEPT:  # before the prefixes: it names the runs it changes
        return run is None or Path(run).name not in NEUTRAL_EXCEPT[name][1]
    return name in NEUTRAL or name in QUOTED or name.startswith(tuple(NEUTRAL_PREFIXES))


def _compare(recorded: Mapping[str, str] | None, current: Mapping[str, str],
             depends: Iterable[str] | None = None, run: str | None = None):
    if recorded is None:
        return None
    if depends is not None:  # only the defaults whose names start with one of these
        prefixes = tuple(depends)
        recorded = {k: v for k, v in recorded.items() if k.startswith(prefixes)}
        current = {k: v for k, v in current.items() if k.startswith(prefixes)}
    # a default that only the runs NEUTRAL_EXCEPT lists read stales no other run, by its
    # addition or by a new value
    changed = {name: (then, current.get(name)) for name, then in recorded.items()
               if current.get(name) != then and name not in QUOTED
               and not (name in NEUTRAL_EXCEPT and _neutral_for(name, run))}
    changed.update({name: (None, now) for name, now in current.items()
                    if name not in recorded and not _neutral_for(name, run)})
    return dict(sorted(changed.items()))


def _stale(path: str, command: str, recorded, current, depends=None) -> StaleRun | None:
    changed = _compare(recorded, current, depends, path)
    if changed is None:
        return StaleRun(path, command, {}, "records no defaults (it predates the record "
                        "or was never stamped): nothing shows it was produced under "
                        "today's")
    if changed:
        return StaleRun(path, command, changed, f"produced under other defaults "
                        f"({len(changed)} changed since)")
    return None


def _manifest(root: Path) -> dict:
    path = root / MANIFEST
    if not path.is_file():
        return {"fingerprints": {}, "files": {}}
    return json.loads(path.read_text())


def stale_runs(root: str | Path, current: Mapping[str, str] | None = None
               ) -> list[StaleRun]:
    """Every recorded run of the repository at ``root`` whose defaults are not today's.

    Parameters
    ----------
    root : str or path
        The repository (the folder that holds ``docs/`` and ``validation/``).
    current : dict, optional
        The defaults to compare with (default :func:`defaults_fingerprint`).

    Returns
    -------
    list of StaleRun
        The study runs (:data:`STUDY_RUNS`), then the validation results
        (:data:`VALIDATION_RESULTS`, each looked up in :data:`MANIFEST`), by path.
    """
    root = Path(root)
    current = defaults_fingerprint() if current is None else current
    out = []
    for path in sorted(root.glob(STUDY_RUNS)):
        record = json.loads(path.read_text())
        found = _stale(str(path.relative_to(root)), record.get("command", "?"),
                       record.get("defaults"), current, record.get("depends"))
        if found is not None:
            out.append(found)
    manifest = _manifest(root)
    files = sorted({p for pattern in VALIDATION_RESULTS for p in root.glob(pattern)})
    for path in files:
        entry = manifest["files"].get(path.name)
        if entry is None:
            out.append(_stale(str(path.relative_to(root)), "the validation script that "
                              f"writes {path.name} (then stamp it: python -m dpreg "
                              f"defaults stamp {path.relative_to(root)} --command CMD)",
                              None, current))
            continue
        recorded = manifest["fingerprints"].get(entry.get("defaults"))
        found = _stale(str(path.relative_to(root)), entry.get("command", "?"), recorded,
                       current, entry.get("depends"))
        if found is not None:
            out.append(found)
    acknowledged = manifest.get("acknowledged", {})
    return [dataclasses.replace(run, acknowledged=acknowledged.get(run.path))
            for run in out]


def check_recorded_runs(root: str | Path) -> None:
    """Raise when a recorded run is older than a change of the defaults it recorded.

    Parameters
    ----------
    root : str or path
        The repository.

    Raises
    ------
    StaleRunError
        Naming every stale run that the manifest does not acknowledge, the defaults
        that changed and the command to rerun it; or an acknowledged run that is
        current (remove it from ``"acknowledged"``).
    """
    stale = stale_runs(root)
    unacknowledged = [run for run in stale if run.acknowledged is None]
    if unacknowledged:
        raise StaleRunError(
            f"{len(unacknowledged)} recorded run(s) are older than a change of the "
            "defaults they depend on; rerun them (the command of each is below; the run "
            "then records today's defaults) before the docs quote them, or acknowledge "
            f"them in {MANIFEST} with the reason the docs still quote them:\n"
            + "\n".join(run.describe() for run in unacknowledged))
    stale_paths = {run.path for run in stale}
    listed = _manifest(Path(root)).get("acknowledged", {})
    current_again = sorted(path for path in listed if path not in stale_paths)
    if current_again:
        raise StaleRunError(
            f"{MANIFEST} acknowledges {current_again} as stale, but they match today's "
            "defaults (or are gone): remove them from 'acknowledged'")


def recorded_runs_page(root: str | Path) -> str:
    """The docs page that lists every stale recorded run (reStructuredText).

    Parameters
    ----------
    root : str or path
        The repository.

    Returns
    -------
    str
        A title, a paragraph, and per stale run: its path, why it is stale, the
        defaults that changed, the reason the docs still quote it and the command that
        reruns it. The docs build writes it to ``docs/studies/recorded_runs.rst``.
    """
    stale = stale_runs(root)
    lines = ["Recorded runs older than today's defaults",
             "=========================================", "",
             "Every figure the docs quote comes from a recorded run (a study's run record "
             "in ``docs/studies/results/`` or a file of ``validation/results/``) that "
             "records the defaults it was produced under "
             "(:mod:`dpreg.studies.defaults`). The docs build fails when a run is older "
             "than a change of the defaults it depends on, unless the run is listed "
             "below with the reason the docs still quote it. "
             f"{len(stale)} run(s) are listed.", ""]
    for run in stale:
        lines += [f"``{run.path}``", f"   {run.reason}. *Still quoted because:* "
                  f"{run.acknowledged or '(not acknowledged)'}", ""]
        shown = sorted(run.changed.items())[:6]
        for name, (then, now) in shown:
            lines.append(f"   * ``{name}``: ``{'(absent)' if then is None else then}`` -> "
                         f"``{'(gone)' if now is None else now}``")
        if len(run.changed) > len(shown):
            lines.append(f"   * ... and {len(run.changed) - len(shown)} more "
                         "(``python -m dpreg defaults check --all``)")
        if shown:
            lines.append("")
        lines += [f"   Rerun: ``{run.command}``", ""]
    return "\n".join(lines) + "\n"


def stamp_validation_results(root: str | Path, files: Iterable[str | Path],
                             command: str, depends: Iterable[str] | None = None) -> dict:
    """Record that ``files`` were just written by ``command`` under today's defaults.

    Call it (or ``python -m dpreg defaults stamp``) right after the run, never for a
    file that an earlier run wrote: the stamp says which defaults produced the numbers.

    Parameters
    ----------
    root : str or path
        The repository.
    files : iterable of str or path
        Files of ``validation/results/`` (paths, or names in that folder).
    command : str
        The command that wrote them (to rerun them).
    depends : iterable of str, optional
        Name prefixes of the defaults their numbers depend on (default: all of them;
        an empty list: none).

    Returns
    -------
    dict
        The manifest as written to :data:`MANIFEST`; a file stamped now is no longer
        acknowledged as stale.
    """
    root = Path(root)
    manifest = _manifest(root)
    fingerprint = defaults_fingerprint()
    key = hashlib.sha256(json.dumps(fingerprint, sort_keys=True).encode()).hexdigest()[:12]
    manifest["fingerprints"][key] = fingerprint
    stamped = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    folder = (root / MANIFEST).parent
    for file in files:
        name = Path(file).name
        if not (folder / name).is_file():
            raise FileNotFoundError(f"no result {name!r} in {folder}")
        manifest["files"][name] = {"command": command, "defaults": key,
                                   "stamped": stamped}
        if depends is not None:
            manifest["files"][name]["depends"] = list(depends)
        manifest.get("acknowledged", {}).pop(f"{MANIFEST.rsplit('/', 1)[0]}/{name}", None)
    used = {entry.get("defaults") for entry in manifest["files"].values()}
    manifest["fingerprints"] = {k: v for k, v in sorted(manifest["fingerprints"].items())
                                if k in used}
    manifest["files"] = dict(sorted(manifest["files"].items()))
    (root / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest
