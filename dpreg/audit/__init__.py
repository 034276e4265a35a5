"""Empirical privacy audits: statistical lower bounds on the epsilon of a mechanism.

An audit runs a mechanism many times on two neighbouring data sets ``D`` (with a
*canary* row chosen to be as easy to detect as possible) and ``D'`` (the canary
replaced or removed), builds a threshold test between the two output distributions on a
one-dimensional statistic, and turns the test's false-positive and false-negative rates
into a lower bound on epsilon that holds with probability at least ``1 - alpha``.

A rigorous accountant gives an *upper* bound on the privacy loss; an audit gives a
*lower* bound. If the lower bound ever exceeds the claimed epsilon, the mechanism (or
its accounting) is broken. If it comes close, the accounting is nearly tight for that
canary. A small lower bound proves nothing: it may be the test, not the mechanism.

- :mod:`dpreg.audit.bounds`: the threshold test and its lower bound
  (:func:`epsilon_lower_bound`, :func:`clopper_pearson`; the method and its references
  are in that module's notes) and the report of an audit (:class:`AuditReport`);
- :mod:`dpreg.audit.mechanisms`: the Gaussian vector mechanism and the Gaussian matrix
  mechanism of :mod:`dpreg.privacy.mechanisms`;
- :mod:`dpreg.audit.engines`: the DP-SGD engine (:func:`dpreg.engines.run_dpsgd`), one
  person's release in LDP-SGD (:class:`dpreg.LDPStream`) and full-batch DP-GD
  (:func:`dpreg.engines.dpgd.run_dpgd`);
- :mod:`dpreg.audit.sensitivity`: not an epsilon but the sensitivity itself, for every
  release over the option grid: the largest change between adversarial neighbours
  against the ledger's sensitivity (:func:`~dpreg.audit.sensitivity.audit_matrix_sensitivity`).
"""

from dpreg.audit.bounds import AuditReport, AuditResult, clopper_pearson, epsilon_lower_bound
from dpreg.audit.engines import audit_dpgd, audit_dpsgd, audit_ldp_step
from dpreg.audit.mechanisms import audit_gaussian_mechanism, audit_matrix_mechanism

__all__ = [
    "AuditResult", "AuditReport", "clopper_pearson", "epsilon_lower_bound",
    "audit_gaussian_mechanism", "audit_matrix_mechanism", "audit_dpsgd", "audit_ldp_step",
    "audit_dpgd",
]
