"""How often the Skill Lift interval covers the true lift, measured side by side with the old one.

Paired per-case differences (with-skill score − without-skill score, each 0–1) are simulated from
shapes a Tier 3 run produces: bounded continuous scores, many ties (pass/fail, shares of four
assertions), and skewed ones (a few cases gain a lot, scores near the ceiling, a rare loss). For
each shape and n = 3, 5, 10, 15, 20, 30 paired cases, ``--datasets`` datasets are drawn and each
interval is checked against the shape's true mean difference:

- ``ours``:  ``stats.paired_interval`` — the interval the cards show (t on paired differences,
             quantile at 96 %, all-equal guard; none below ``MIN_CASES_FOR_INTERVAL``);
- ``t95``:   the textbook 95 % t interval, no guard (what ours would be without its two choices);
- ``pboot``: the percentile bootstrap of the mean difference the cards used before (1000 resamples).

Goal: ``ours`` ≥ 0.93 at every n where the card shows an interval. The binomial standard error of a
rate near 0.95 over 4000 datasets is 0.003.

    .venv/bin/python benchmarks/interval_coverage.py [--datasets 4000] [--seed 1]
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable

import numpy as np

from pytest_skilleval.tier3 import stats

Sampler = Callable[[np.random.Generator, int, int], np.ndarray]  # (rng, datasets, n) -> differences


def _shapes() -> dict[str, tuple[Sampler, float]]:
    def spikes(p: float, low: float, high: float, sign: float) -> Sampler:
        return lambda g, r, n: np.where(g.random((r, n)) < p, sign * g.uniform(low, high, (r, n)), 0.0)

    return {
        "bounded, no effect": (lambda g, r, n: g.beta(2, 2, (r, n)) - g.beta(2, 2, (r, n)), 0.0),
        "bounded, gain": (lambda g, r, n: g.beta(4, 2, (r, n)) - g.beta(2, 3, (r, n)), 4 / 6 - 2 / 5),
        "ties: pass/fail": (lambda g, r, n: g.binomial(1, 0.8, (r, n)) - g.binomial(1, 0.5, (r, n)).astype(float), 0.3),
        "ties: 4-assertion shares": (lambda g, r, n: (g.binomial(4, 0.7, (r, n)) - g.binomial(4, 0.6, (r, n))) / 4, 0.1),
        "skewed: 30% gain a lot": (spikes(0.3, 0.5, 1.0, 1.0), 0.3 * 0.75),
        "skewed: 15% gain a lot": (spikes(0.15, 0.5, 1.0, 1.0), 0.15 * 0.75),
        "skewed: near the ceiling": (lambda g, r, n: g.beta(8, 1, (r, n)) - g.beta(4, 1, (r, n)), 8 / 9 - 4 / 5),
        "skewed: 15% lose all": (lambda g, r, n: np.where(g.random((r, n)) < 0.15, -1.0, 0.0), -0.15),
    }


def _ours(data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    pairs = [stats.paired_interval(row) for row in data]
    return (np.array([p[0] if p else -math.inf for p in pairs]), np.array([p[1] if p else math.inf for p in pairs]))


def _t95(data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n = data.shape[1]
    half = stats.t_quantile(0.975, n - 1) * data.std(axis=1, ddof=1) / math.sqrt(n)
    mean = data.mean(axis=1)
    return mean - half, mean + half


def _pboot(data: np.ndarray, rng: np.random.Generator, resamples: int = 1000) -> tuple[np.ndarray, np.ndarray]:
    low, high = np.empty(len(data)), np.empty(len(data))
    for i, row in enumerate(data):
        means = row[rng.integers(0, row.size, (resamples, row.size))].mean(axis=1)
        low[i], high[i] = np.quantile(means, [0.025, 0.975])
    return low, high


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--sizes", default="3,5,10,15,20,30")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    print(f"{args.datasets} datasets per cell; interval shown from n = {stats.MIN_CASES_FOR_INTERVAL}; "
          f"ours: {stats.INTERVAL_METHOD}\n")
    print("| shape | n | ours | t95 | pboot | ours width | pboot width |\n|---|---:|---:|---:|---:|---:|---:|")
    worst: dict[int, float] = {}
    for name, (sample, truth) in _shapes().items():
        for n in sizes:
            data = sample(rng, args.datasets, n).astype(float)
            (ours_low, ours_high), t95, (boot_low, boot_high) = _ours(data), _t95(data), _pboot(data, rng)
            cells = [((low <= truth + 1e-12) & (truth - 1e-12 <= high)).mean()
                     for low, high in ((ours_low, ours_high), t95, (boot_low, boot_high))]
            shown = n >= stats.MIN_CASES_FOR_INTERVAL
            worst[n] = min(worst.get(n, 1.0), cells[0]) if shown else worst.get(n, math.nan)
            print(f"| {name} | {n} | {cells[0]:.3f} | {cells[1]:.3f} | {cells[2]:.3f} | "
                  f"{np.mean(ours_high - ours_low):.2f} | {np.mean(boot_high - boot_low):.2f} |", flush=True)
    print("\nworst coverage of ours over the shapes, by n: " + ", ".join(f"n={n}: {c:.3f}" for n, c in sorted(worst.items())))
    print(f"goal >= 0.93 wherever an interval is shown: {'met' if all(c >= 0.93 for c in worst.values()) else 'NOT met'}"
          f"  ({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
