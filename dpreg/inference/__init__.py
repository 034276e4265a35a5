"""Inference for private estimates: plug-in, random scaling, and the pivot's law.

Each method is a function returning an :class:`~dpreg.inference.base.Inference` record
(a scale per coefficient and a reference law); Results only read these records.
``rs_pivot`` is the law of ``W(1) / sqrt(int_0^1 (W(r) - r W(1))^2 dr)`` with
``cdf``, ``sf``, ``pdf`` and ``ppf`` like a scipy.stats distribution.
"""

from dpreg.inference.base import Inference, NormalLaw, StudentLaw
from dpreg.inference.pivot import RandomScalingPivot, rs_pivot

__all__ = ["Inference", "NormalLaw", "StudentLaw", "RandomScalingPivot", "rs_pivot"]
