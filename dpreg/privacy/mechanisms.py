"""Gaussian mechanisms that touch the data: each returns its value with its event.

Floating-point Gaussian sampling is not safe against side channels that read the low
bits of the noise (Mironov 2012); dpreg protects the released numbers, not timing or
floating-point artefacts (see the threat model in the docs).
"""

from __future__ import annotations

import numpy as np

from dpreg.privacy.events import GaussianMechanismEvent

__all__ = ["gaussian_matrix_mechanism", "symmetric_gaussian_noise"]


def symmetric_gaussian_noise(p: int, std: float, rng: np.random.Generator) -> np.ndarray:
    """Symmetric ``p x p`` matrix whose upper triangle (with diagonal) is iid N(0, std^2)."""
    upper = np.triu(rng.standard_normal((p, p)) * std)
    return upper + np.triu(upper, 1).T


def gaussian_matrix_mechanism(
        matrix: np.ndarray, event: GaussianMechanismEvent,
        rng: np.random.Generator) -> tuple[np.ndarray, GaussianMechanismEvent]:
    """Release a symmetric matrix with the Gaussian noise that ``event`` describes.

    Notes
    -----
    For ``M = n^{-1} sum_i m_i m_i^T`` with ``||m_i||_2^2 <= B`` the replace-one
    Frobenius sensitivity is ``2B/n`` (``B/n`` under add/remove with public ``n``); the
    upper triangle is a vector whose L2 change is at most the Frobenius change, so
    noise of std ``sensitivity / mu`` on it is mu-GDP (ldp-sgd paper, Prop. 4;
    Avella-Medina, Bradshaw and Loh 2023).
    """
    noisy = matrix + symmetric_gaussian_noise(matrix.shape[0], event.noise_std, rng)
    return noisy, event
