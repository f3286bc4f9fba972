"""Confidence intervals over seeds, and range comparisons, for the reports.

A report cell that is a mean over seeds gets a 95 % Student t-interval: mean
± t(0.975, n − 1) · s / √n, with s the sample standard deviation (ddof = 1)
of the n per-seed values. Two arms run with the same seeds see the same
workload data, so their difference is a *paired* interval: the t-interval of
the per-seed differences. A difference whose interval contains 0 is "within
noise". One seed gives no interval (NaN).

The quantiles are the standard two-sided 95 % values of Student's t (any
statistics table; numpy has no t quantile function and these few constants
do not justify a SciPy dependency); a test checks them against SciPy where
it is installed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["T975", "t975", "t_interval", "paired_interval", "within", "range_agreement"]

#: Two-sided 95 % quantiles t(0.975, df) of Student's t for df = 1 … 30.
T975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)


def t975(df: int) -> float:
    """t(0.975, df); above 30 degrees of freedom the value for 30 (at most
    4 % wider than the exact one, never narrower)."""
    if df < 1:
        raise ValueError(f"a t quantile needs at least 1 degree of freedom, got {df}")
    return T975[min(df, len(T975)) - 1]


def t_interval(values: Sequence[float]) -> tuple[float, float]:
    """``(mean, half-width)`` of the 95 % t-interval of ``values``; the
    half-width is NaN for fewer than two values."""
    v = np.asarray([float(x) for x in values if not math.isnan(float(x))], dtype=float)
    if len(v) == 0:
        return float("nan"), float("nan")
    if len(v) < 2:
        return float(v.mean()), float("nan")
    return float(v.mean()), t975(len(v) - 1) * float(v.std(ddof=1)) / math.sqrt(len(v))


def paired_interval(a: Sequence[float], b: Sequence[float]) -> tuple[float, float, float]:
    """The mean of ``a − b`` over seeds (``a`` and ``b`` in seed order) and its
    95 % t-interval ``(mean, low, high)``."""
    if len(a) != len(b):
        raise ValueError(f"paired values need as many of each, got {len(a)} and {len(b)}")
    mean, half = t_interval([float(x) - float(y) for x, y in zip(a, b)])
    return mean, mean - half, mean + half


def within(low: float, high: float, value: float = 0.0) -> bool:
    """Whether ``value`` lies in ``[low, high]`` (a NaN bound: False, since
    without an interval nothing can be called noise)."""
    if math.isnan(low) or math.isnan(high):
        return False
    return low <= value <= high


def range_agreement(lo: float, hi: float, plo: float, phi: float) -> str:
    """How our range ``[lo, hi]`` sits against the paper's ``[plo, phi]``:
    ``"yes"`` when ours falls inside the paper's, ``"partly"`` when the two
    overlap but ours reaches outside, ``"no"`` when they are disjoint."""
    if lo >= plo and hi <= phi:
        return "yes"
    if hi < plo or lo > phi:
        return "no"
    return "partly"
