"""Vectorised cosine similarity over unit vectors, computed in row blocks so memory stays bounded.

A full N x N matrix of 10,000 skills is 400 MB of float32; a block of 1,024 rows against all N is
40 MB whatever N is. Past tens of thousands of skills the exact all-pairs product itself becomes
the cost (it grows with N^2), and the documented path is an approximate-nearest-neighbour index
(docs/tier2.md); the block API here is what such an index would replace.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

BLOCK_ROWS = 1024


def row_blocks(n: int, size: int | None = None) -> Iterator[slice]:
    size = size or BLOCK_ROWS  # read at call time, so a test can shrink blocks to exercise the seams
    for start in range(0, n, size):
        yield slice(start, min(start + size, n))


def pairs_at_least(vectors: np.ndarray, threshold: float) -> list[tuple[int, int, float]]:
    """Every (i, j, cosine) with i < j and cosine >= threshold, over unit rows of ``vectors``."""
    out: list[tuple[int, int, float]] = []
    n = len(vectors)
    for rows in row_blocks(n):
        sims = vectors[rows] @ vectors.T
        ii, jj = np.nonzero(sims >= threshold)
        for i, j in zip(ii.tolist(), jj.tolist(), strict=True):
            gi = rows.start + i
            if j > gi:
                out.append((gi, j, float(sims[i, j])))
    return out


def top_matches(n_query: int, block_scores: Callable[[slice], np.ndarray | None], *, k: int,
                exclude_self: bool) -> list[list[tuple[int, float]]]:
    """For each query row, up to ``k`` (pool index, score) pairs, best first.

    ``block_scores(rows)`` returns the score block for those query rows against the whole pool,
    with ``-inf`` (or anything below the caller's floor, already masked) where there is no match;
    ``exclude_self`` drops the diagonal when the queries are the first rows of the pool.
    """
    result: list[list[tuple[int, float]]] = []
    for rows in row_blocks(n_query):
        scores = block_scores(rows)
        if scores is None:
            result += [[] for _ in range(rows.stop - rows.start)]
            continue
        if exclude_self:
            idx = np.arange(rows.stop - rows.start)
            scores[idx, idx + rows.start] = -np.inf
        width = min(k, scores.shape[1])
        if width == 0:
            result += [[] for _ in range(rows.stop - rows.start)]
            continue
        # argpartition is linear per row: a dense block (a catalog of near-identical templates) costs
        # the same as a sparse one, where sorting every surviving entry would not.
        best = np.argpartition(scores, scores.shape[1] - width, axis=1)[:, -width:]
        vals = np.take_along_axis(scores, best, axis=1)
        for cols, row_vals in zip(best.tolist(), vals.tolist(), strict=True):
            kept = [(j, v) for j, v in zip(cols, row_vals, strict=True) if v != -np.inf]
            result.append(sorted(kept, key=lambda t: (-t[1], t[0])))
    return result


class UnionFind:
    def __init__(self, n: int) -> None:
        self.parent = list(range(n))

    def find(self, x: int) -> int:
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]  # path halving keeps the trees flat
            x = self.parent[x]
        return x

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)

    def groups(self) -> list[list[int]]:
        """Sets of two or more members, each sorted, ordered by their first member."""
        by_root: dict[int, list[int]] = {}
        for x in range(len(self.parent)):
            by_root.setdefault(self.find(x), []).append(x)
        return sorted((g for g in by_root.values() if len(g) > 1), key=lambda g: g[0])
