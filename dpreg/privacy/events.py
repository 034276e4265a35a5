"""Frozen descriptions of the mechanisms a fit runs: privacy as data.

An event says everything an accountant needs (sensitivity, noise, adjacency, sampling,
number of releases) and nothing about the data. Its meaning never changes once it is
written: accountants only read events, and the ledger only appends them.

Notes
-----
Designed after ``dp_accounting.dp_event`` (Google's differential-privacy library):
an event describes one mechanism completely and is consumed by interchangeable
accountants. ``to_dp_accounting`` returns the matching ``dp_accounting`` event, whose
Gaussian noise multiplier is ``noise_std / sensitivity`` with ``sensitivity`` the L2
distance between the outputs on two neighbouring data sets (the convention of
``dp_accounting``'s RDP accountant under both neighbouring relations, and of its PLD
accountant under add/remove; see :mod:`dpreg.privacy.accountants` for the PLD
accountant's replace-one convention, which differs by a factor of two).

Floating-point Gaussian noise is not safe against side channels that read the low
bits of the noise (Mironov 2012, "On significance of the least significant bits for
differential privacy"; diffprivlib ``mechanisms/snapping.py``); dpreg protects the
released numbers, not such artefacts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import dp_accounting

from dpreg._checks import integer_at_least, one_of, positive_number
from dpreg.exceptions import OptionError
from dpreg.privacy.gdp import dpsgd_mu, gaussian_mu

__all__ = ["GaussianMechanismEvent", "ADJACENCIES", "SAMPLINGS", "SCOPES", "ZERO_OUT",
           "cluster_adjacency", "is_replace_one"]

#: A row replaced by a null row (one whose gradient and Hessian are zero) while the
#: number of rows n stays public: what Poisson-sampled DP-SGD with a public n provides.
#: Accountants analyse it as add/remove (a null row contributes what an absent row
#: would); a replace-one change is two zero-out changes (group privacy: 2 mu).
ZERO_OUT = "zero-out (n public)"
ADJACENCIES = ("replace-one", "add/remove", ZERO_OUT)
#: One whole cluster (of at most K rows, K public) replaced by another of at most K rows,
#: with the number of clusters G public: replace-one with the cluster as the unit. The
#: accountants treat it as replace-one (the sensitivities are per cluster); the string
#: carries K, e.g. ``"replace-one cluster (at most 20 rows)"``.
_CLUSTER = re.compile(r"replace-one cluster \(at most [1-9][0-9]* rows?\)")


def cluster_adjacency(max_group_size: int) -> str:
    """The adjacency string of a replace-one-cluster release with clusters of at most
    ``max_group_size`` rows.

    Parameters
    ----------
    max_group_size : int
        ``K``, public.

    Returns
    -------
    str
        ``"replace-one cluster (at most K rows)"``.
    """
    integer_at_least("max_group_size", max_group_size)
    k = int(max_group_size)
    return f"replace-one cluster (at most {k} row{'s' if k > 1 else ''})"


def is_replace_one(adjacency: str) -> bool:
    """Whether ``adjacency`` is accounted as replace-one (a row, or a whole cluster).

    Parameters
    ----------
    adjacency : str

    Returns
    -------
    bool
    """
    return adjacency == "replace-one" or bool(_CLUSTER.fullmatch(adjacency))
SAMPLINGS = ("none", "uniform", "poisson")
SCOPES = ("central", "local")
# The schemes each sampling is analysed under (GDP CLT and dp_accounting alike).
_SAMPLING_ADJACENCY = {"uniform": ("replace-one",), "poisson": ("add/remove", ZERO_OUT)}


@dataclass(frozen=True)
class GaussianMechanismEvent:
    """A (possibly subsampled, possibly repeated) Gaussian mechanism.

    Parameters
    ----------
    name : str
        What was released, e.g. ``"DP-SGD path"``, ``"Hessian A"``.
    sensitivity : float
        L2 (Frobenius for matrices) sensitivity of ONE release under ``adjacency``:
        the largest distance between the outputs on two neighbouring data sets.
    noise_std : float
        Standard deviation of the Gaussian noise per coordinate per release.
    adjacency : {"replace-one", "add/remove", "zero-out (n public)"} or str
        ``"zero-out (n public)"`` (:data:`ZERO_OUT`): one row replaced by a null row
        with n unchanged and public; accounted as add/remove. Or
        :func:`cluster_adjacency`'s ``"replace-one cluster (at most K rows)"`` (no
        sampling): accounted as replace-one, with the sensitivity per cluster.
    sampling : {"none", "uniform", "poisson"}
        ``"uniform"``: a fixed-size batch of ``sample_size`` rows drawn without
        replacement (analysed under replace-one); ``"poisson"``: each row joins with
        probability ``sample_size / population`` (analysed under add/remove, or
        zero-out when n is public).
    sample_size : int or float, optional
        m for ``"uniform"`` (integer), expected batch size q n for ``"poisson"``.
    population : int, optional
        n, public. Required with sampling.
    count : int
        Number of self-composed releases (e.g. T steps).
    scope : {"central", "local"}
        ``"central"``: a curator holding the data runs the mechanism on all rows.
        ``"local"``: every person runs it on their own row before anything leaves
        their hands (LDP-SGD); each row is touched once, so by parallel composition
        the whole release costs one mechanism's budget (ldp-sgd paper, Prop. 5).

    Notes
    -----
    Replace-one vs add/remove changes the sensitivity, not the noise: the clipped
    gradient sum with clip tau has sensitivity 2 tau under replace-one and tau under
    add/remove (user guide, Privacy: "Adjacency and sensitivity").
    """

    name: str
    sensitivity: float
    noise_std: float
    adjacency: str
    sampling: str = "none"
    sample_size: int | float | None = None
    population: int | None = None
    count: int = 1
    scope: str = "central"

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise OptionError(f"name must be a non-empty string; got {self.name!r}")
        positive_number("sensitivity", self.sensitivity)
        positive_number("noise_std", self.noise_std)
        if not (isinstance(self.adjacency, str) and _CLUSTER.fullmatch(self.adjacency)):
            one_of("adjacency", self.adjacency, ADJACENCIES)
        one_of("sampling", self.sampling, SAMPLINGS)
        integer_at_least("count", self.count)
        one_of("scope", self.scope, SCOPES)
        if self.scope == "local" and (self.sampling != "none" or self.count != 1):
            raise OptionError("a local mechanism runs once on each person's own row: "
                              "sampling must be 'none' and count 1")
        if self.sampling == "none":
            if self.sample_size is not None and self.population is not None and (
                    self.sample_size != self.population):
                raise OptionError("sampling='none' releases use every row: sample_size "
                                  "must equal population (or be None)")
            return
        if self.population is None or self.sample_size is None:
            raise OptionError(f"sampling={self.sampling!r} needs population (n) and "
                              "sample_size (m)")
        integer_at_least("population", self.population)
        if self.sampling == "uniform":
            integer_at_least("sample_size", self.sample_size)
        else:
            positive_number("sample_size", self.sample_size)
        if self.sample_size > self.population:
            raise OptionError(f"sample_size must be in (0, population={self.population}]; "
                              f"got {self.sample_size!r}")
        wanted = _SAMPLING_ADJACENCY[self.sampling]
        # uniform sampling of clusters under replace-one cluster is uniform sampling of
        # rows with the cluster as the row: population G, sample size m (clusters)
        cluster_rows = self.sampling == "uniform" and is_replace_one(self.adjacency)
        if self.adjacency not in wanted and not cluster_rows:
            raise OptionError(f"sampling={self.sampling!r} is analysed under adjacency "
                              f"{' or '.join(map(repr, wanted))} only; got "
                              f"adjacency={self.adjacency!r}")

    @property
    def noise_multiplier(self) -> float:
        """s = noise_std / sensitivity."""
        return self.noise_std / self.sensitivity

    @property
    def sample_rate(self) -> float:
        """q = sample_size / population (1 for ``sampling="none"``)."""
        if self.sampling == "none":
            return 1.0
        return self.sample_size / self.population

    @property
    def is_subsampled(self) -> bool:
        """True when some rows may be left out of a release (q < 1)."""
        return self.sampling != "none" and self.sample_rate < 1.0

    def mu(self) -> float:
        """GDP parameter: exact for full batches, the CLT of :func:`dpsgd_mu` otherwise."""
        if not self.is_subsampled:
            return gaussian_mu(self.sensitivity, self.noise_std, self.count)
        return dpsgd_mu(self.population, self.sample_size, self.count,
                        self.noise_multiplier, self.sampling)

    def to_dp_accounting(self) -> dp_accounting.DpEvent:
        """The same mechanism as a ``dp_accounting`` event.

        Returns ``GaussianDpEvent(s)`` (``SelfComposedDpEvent`` of it when
        ``count > 1``), ``SelfComposedDpEvent(PoissonSampledDpEvent(q,
        GaussianDpEvent(s)), count)`` or ``SelfComposedDpEvent(
        SampledWithoutReplacementDpEvent(n, m, GaussianDpEvent(s)), count)``, with
        ``s = noise_std / sensitivity`` (see the module notes for the convention).
        """
        base = dp_accounting.GaussianDpEvent(self.noise_multiplier)
        if self.is_subsampled and self.sampling == "poisson":
            base = dp_accounting.PoissonSampledDpEvent(self.sample_rate, base)
        elif self.is_subsampled:
            base = dp_accounting.SampledWithoutReplacementDpEvent(
                int(self.population), int(self.sample_size), base)
        if self.count == 1:
            return base
        return dp_accounting.SelfComposedDpEvent(base, int(self.count))
