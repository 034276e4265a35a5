"""Exception and warning classes raised by dpreg.

Every error a user can trigger through the public API is one of these classes, and its
message names the column, value or parameter at fault and what to do about it.
"""

__all__ = [
    "DPRegError",
    "DataError",
    "FormulaError",
    "OptionError",
    "BudgetExceededError",
    "PrivacyLeakWarning",
    "ConvergenceWarning",
    "DatasetNotFoundError",
    "user_stacklevel",
]


class DPRegError(Exception):
    """Base class of every error raised by dpreg."""


class DataError(DPRegError, ValueError):
    """The data cannot be used as given (missing column, non-numeric or non-finite
    values, no rows left, collinear design, duplicate column names)."""


class FormulaError(DPRegError, ValueError):
    """The formula cannot be parsed or refers to something that is not in the data."""


class OptionError(DPRegError, ValueError):
    """An option is unknown, has the wrong type, or is outside its range."""


class BudgetExceededError(DPRegError, ValueError):
    """A privacy request is invalid, too small to run, or would be exceeded."""


class DatasetNotFoundError(DPRegError, FileNotFoundError):
    """A real data set is not where dpreg looked for it, or its checksum is wrong."""


class PrivacyLeakWarning(UserWarning):
    """A bound or constant the privacy guarantee depends on was not declared.

    Pass ``strict=True`` to make this an error.
    """


class ConvergenceWarning(UserWarning):
    """An optimizer or root finder stopped before meeting its tolerance, or a fit's
    diagnostics found its intervals unreliable (an unconverged path, a private matrix
    dominated by its noise)."""


class ConvergenceError(DPRegError, RuntimeError):
    """An engine diverged (non-finite iterates); the message says which option to change."""


__all__.append("ConvergenceError")


class PrivacyLeakError(DPRegError, ValueError):
    """Raised instead of :class:`PrivacyLeakWarning` when ``strict=True``."""


__all__.append("PrivacyLeakError")


class SeedReuseWarning(UserWarning):
    """A private fit was given a fixed seed (``random_state`` an integer).

    A seed makes the privacy noise reproducible: it is for re-running the same fit on
    the same data, never for a second release. Two releases on neighbouring data sets
    with the same seed share their noise, which cancels in their difference and leaves
    the exact change that one person made. Omit ``random_state`` for a release.
    """


__all__.append("SeedReuseWarning")


class PrivateStatisticError(DPRegError, AttributeError):
    """The attribute or call would release a statistic of the private data that no
    mechanism paid for (fitted values, residuals, R-squared, log-likelihood, averages
    over the rows). The message names a private alternative where dpreg has one.

    It is an ``AttributeError``, so ``getattr(results, "rsquared", default)`` (as in
    statsmodels' own tools) returns the default.
    """


__all__.append("PrivateStatisticError")


def user_stacklevel() -> int:
    """Stack level of the first frame outside dpreg, so warnings point at the user's line."""
    import sys

    level, frame = 1, sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__", "").startswith("dpreg"):
        frame, level = frame.f_back, level + 1
    return level
