"""Vectorised cosine similarity over unit vectors, computed in row blocks so memory stays bounded.

A full N x N matrix of 10,000 skills is 400 MB of float32; a block of 1,024 rows against all N is
40 MB whatever N is. Past tens of thousands of skills the exact all-pairs product itself becomes
the cost (it grows with N^2), and the documented path is an approximate-nearest-neighbour index
(docs/tier2.md); the block API here is what such an index would replace.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

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
    def one_block(rows: slice) -> list[list[tuple[int, float]]]:
        empty: list[list[tuple[int, float]]] = [[] for _ in range(rows.stop - rows.start)]
        scores = block_scores(rows)
        if scores is None:
            return empty
        if exclude_self:
            idx = np.arange(rows.stop - rows.start)
            scores[idx, idx + rows.start] = -np.inf
        width = min(k, scores.shape[1])
        if width == 0:
            return empty
        # The k-th best score of each row by np.partition (linear per row, and ~3x faster than
        # argpartition); the entries at or above it are then read with one nonzero() pass. Negated,
        # so the k-th falls among real scores: introselect slows ~6x amid the many tied -inf.
        kth = -np.partition(-scores, width - 1, axis=1)[:, width - 1]
        ii, jj = np.nonzero((scores >= kth[:, None]) & (scores > -np.inf))  # a short row's kth is -inf
        for i, j, v in zip(ii.tolist(), jj.tolist(), scores[ii, jj].tolist(), strict=True):
            empty[i].append((j, v))
        return [sorted(row, key=lambda t: (-t[1], t[0]))[:width] for row in empty]

    # numpy releases the GIL in its loops, so two blocks in flight keep both cores busy with the
    # single-threaded parts (table lookup, partition) while memory stays at two blocks.
    with ThreadPoolExecutor(max_workers=min(2, os.cpu_count() or 1)) as pool:
        return [row for block in pool.map(one_block, row_blocks(n_query)) for row in block]


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
