"""``<skill>::tier2::similarity``: how close each skill is to every other skill (and a reference catalog).

Two aspects per skill: ``name: description`` (what an agent sees when it picks a skill) and the
whole SKILL.md body (length-weighted mean of its chunk vectors, so no model truncates it). Each raw
cosine is mapped to the reference scale of its backend (:mod:`calibration`), a pair scores the
higher of its two aspects, and the band follows from that score. The whole catalog is indexed once
per process; the similarity is one blocked matrix product, not N^2 Python comparisons.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pytest_skilleval import identity, safefs
from pytest_skilleval.results import Finding
from pytest_skilleval.skill import Skill
from pytest_skilleval.tier2 import calibration
from pytest_skilleval.tier2.cache import CachedEmbedder, text_key
from pytest_skilleval.tier2.chunking import chunk_texts
from pytest_skilleval.tier2.embedders import EmbedderPair
from pytest_skilleval.tier2.embedders.onnx_minilm import OnnxMiniLMEmbedder
from pytest_skilleval.tier2.similarity import top_matches

MAX_DESCRIPTION = 16_384
TOP_K = 20  # matches kept per skill: bounds memory on big catalogs, and no one reads the 21st
BATCH = 256  # skills embedded (and cached) per step, so xdist workers pick up each other's work
BODY_KIND = "body-pool-v1"
#: Catalogs from this many skills embed their descriptions in a child process (embedders/child.py):
#: starting it costs ~1 CPU second, which a few hundred descriptions do not win back.
PROCESS_AT = 1_000


@dataclass(frozen=True)
class SkillText:
    """What Tier 2 compares across skills; built from a loaded Skill or synthesised (benchmarks)."""

    key: str
    name: str
    description: str
    body: str
    path: str
    origin: str = "collected"  # or "reference" (from --skilleval-compare-to)

    @classmethod
    def of(cls, skill: Skill, origin: str = "collected") -> SkillText:
        return cls(skill.key, skill.name, skill.description, skill.body if skill.manifest_text else "", str(skill.root), origin)

    @property
    def short_text(self) -> str:
        return f"{self.name}: {self.description}"[:MAX_DESCRIPTION]


@dataclass(frozen=True)
class Match:
    other: SkillText
    score: float  # reference scale, max over aspects
    description: tuple[float, float]  # (raw cosine, reference scale)
    body: tuple[float, float]

    @property
    def band(self) -> tuple[str, calibration.Severity, bool] | None:
        return calibration.band(self.score)

    def as_metric(self) -> dict[str, object]:
        b = self.band
        return {"skill": self.other.key, "name": self.other.name, "origin": self.other.origin, "score": round(self.score, 4),
                "band": b[0] if b else "DISTINCT", "description": [round(v, 4) for v in self.description],
                "body": [round(v, 4) for v in self.body]}


def body_vectors(texts: Sequence[SkillText], embedder: CachedEmbedder) -> np.ndarray:
    """One pooled vector per body; a cached pooled vector skips chunking altogether."""
    keys = [text_key(embedder.model_id, t.body, BODY_KIND) for t in texts]
    out = np.zeros((len(texts), embedder.dim), dtype=np.float32)
    found, stored = embedder.cache.lookup(keys) if embedder.cache is not None else (np.zeros(0, dtype=np.int64), None)
    if len(found):
        # stored as float16: renormalised by the same _unit as the cold pass below. A norm taken another
        # way (np.linalg.norm of one row: BLAS's dot) rounds differently on some CPUs, and a warm cache
        # changed a score in its last bit (AMD EPYC; tests/unit/test_tier2_inter.py)
        out[found, :stored.shape[1]] = _unit(stored)
    cached = set(found.tolist())
    todo = [i for i in range(len(texts)) if i not in cached]
    chunks = [chunk_texts(texts[i].body) for i in todo]
    flat = [c for body in chunks for c in body]
    pooled_all = np.zeros((len(texts), embedder.dim), dtype=np.float32)
    if flat:
        vecs = embedder.embed(flat)
        counts = np.array([len(body) for body in chunks])
        weights = np.fromiter((len(c) for c in flat), dtype=np.float32, count=len(flat))
        has = counts > 0
        # length-weighted sums of each body's chunk vectors, all bodies in one pass
        sums = np.add.reduceat(vecs * weights[:, None], np.concatenate(([0], np.cumsum(counts)[:-1]))[has], axis=0)
        rows = np.asarray(todo)[has]
        pooled_all[rows] = _unit(sums)
        # what a later run reads back from the float16 cache, so a warm cache never changes a score
        out[rows] = _unit(pooled_all[rows].astype(np.float16).astype(np.float32))
    if todo and embedder.cache is not None:
        embedder.cache.put([keys[i] for i in todo], pooled_all[todo])
    return out


def _unit(rows: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return np.divide(rows, norms, out=np.zeros_like(rows), where=norms > 0)


class CatalogIndex:
    """Vectors of every collected and reference skill; ``matches(i)`` for the collected ones."""

    def __init__(self, collected: Sequence[SkillText], reference: Sequence[SkillText], pair: EmbedderPair,
                 *, worker: tuple[int, int] = (0, 1)) -> None:
        self.entries = list(collected) + list(reference)
        self.n_collected = len(collected)
        short, chunks = pair.short, pair.chunks
        assert isinstance(short, CachedEmbedder) and isinstance(chunks, CachedEmbedder)
        self.models = {"description": short.model_id, "body": chunks.model_id}
        self.scales = {aspect: calibration.scale_for(mid, aspect) for aspect, mid in self.models.items()}
        n = len(self.entries)
        self.desc = np.zeros((n, short.dim), dtype=np.float32)
        self.body = np.zeros((n, chunks.dim), dtype=np.float32)
        # Each xdist worker starts at its own offset, so on a cold cache the workers embed
        # different batches first and then find each other's batches in the shared cache.
        starts = list(range(0, n, BATCH))
        if starts:
            shift = (worker[0] * len(starts)) // max(worker[1], 1)
            starts = starts[shift:] + starts[:shift]
        # Descriptions go to the transformer in order of length, so each step's batches hold texts of
        # about one width (16 % of the tokens were padding when steps followed catalog order).
        by_length = sorted(range(n), key=lambda i: len(self.entries[i].short_text))
        steps = [(start, by_length[start:start + BATCH]) for start in starts]

        if short is chunks:  # one shared backend (and its cache) stays on one thread
            for start, rows in steps:
                self.body[start:start + BATCH] = body_vectors(self.entries[start:start + BATCH], chunks)
                self.desc[rows] = short.embed([self.entries[i].short_text for i in rows])
        else:
            # Two backends (the default pair): the transformer embeds the descriptions on a second thread
            # (onnxruntime releases the GIL), step after step without waiting for the bodies, while this
            # thread chunks and pools the bodies. (Waiting for each other at every step left a core idle
            # whenever a step's short descriptions took less time than its bodies.)
            stop = threading.Event()

            def describe(embedder: CachedEmbedder) -> None:  # stops at the first error, or when the bodies failed
                for _, rows in steps:
                    if stop.is_set():
                        return
                    self.desc[rows] = embedder.embed([self.entries[i].short_text for i in rows])

            with contextlib.ExitStack() as children, ThreadPoolExecutor(max_workers=1) as pool:
                describer = short
                if n >= PROCESS_AT and isinstance(short.inner, OnnxMiniLMEmbedder) and short.inner.build == "dq8":
                    # The same model in a child process (started on the first description not cached): its
                    # threads need no interpreter lock from this thread's chunking (embedders/child.py).
                    from pytest_skilleval.tier2.embedders.child import ChildEmbedder

                    describer = CachedEmbedder(children.enter_context(ChildEmbedder(short.inner)), short.cache)
                describing = pool.submit(describe, describer)
                try:
                    for start, _ in steps:
                        if describing.done():
                            describing.result()  # a model error ends the index now, not after every body
                        self.body[start:start + BATCH] = body_vectors(self.entries[start:start + BATCH], chunks)
                    describing.result()
                finally:
                    stop.set()
                if describer is not short:
                    short.embedded += describer.embedded
        # Every worker holds this index for the whole session: once embedded, an entry keeps only what a
        # finding names (key, name, path, origin), not its texts (a long SKILL.md body is most of a skill).
        self.entries = [dataclasses.replace(e, description="", body="") for e in self.entries]
        self._matches: list[list[tuple[int, float]]] | None = None

    def _block(self, rows: slice) -> np.ndarray | None:
        """Reference-scale scores of these rows against every entry, -inf under the lowest band.

        Dense throughout: interpolating a whole block costs less than gathering its survivors by
        fancy indexing once many pairs survive (catalogs of templated skills), and identity scales
        (MiniLM, remote models) skip the interpolation altogether.
        """
        scores = self._aspect(self.desc[rows] @ self.desc.T, self.scales["description"])
        np.maximum(scores, self._aspect(self.body[rows] @ self.body.T, self.scales["body"]), out=scores)
        scores[scores < calibration.LOWEST_BAND] = -np.inf
        return scores

    @staticmethod
    def _aspect(raw: np.ndarray, scale: calibration.Scale) -> np.ndarray:
        return raw if scale is calibration.IDENTITY else scale.map_block(raw, calibration.LOWEST_BAND)

    def all_matches(self) -> list[list[tuple[int, float]]]:
        if self._matches is None:
            self._matches = top_matches(self.n_collected, self._block, k=TOP_K, exclude_self=True)
        return self._matches

    def matches(self, i: int) -> list[Match]:
        out = []
        for j, score in self.all_matches()[i]:
            d = float(self.desc[i] @ self.desc[j])
            b = float(self.body[i] @ self.body[j])
            out.append(Match(self.entries[j], score, (d, float(self.scales["description"](d))),
                             (b, float(self.scales["body"](b)))))
        return out


def findings(skill: Skill, matches: Sequence[Match], show_threshold: float, models: dict[str, str]) -> list[Finding]:
    out = []
    for m in matches:
        band = m.band
        if band is None or m.score < show_threshold:
            continue
        name, severity, blocking = band
        by_desc = m.description[1] >= m.body[1]
        where = "catalog skill" if m.other.origin == "reference" else "skill"
        out.append(Finding(
            rule=f"tier2.similarity.{name.lower()}", severity=severity, file=skill.manifest or "SKILL.md",
            line=skill.key_line("description") if by_desc else skill.body_start_line,
            message=(f"{name} ({m.score:.2f}) with {where} '{m.other.name}' ({m.other.key}): description {m.description[1]:.2f}, "
                     f"body {m.body[1]:.2f} [{models['description']} / {models['body']}]"
                     + (" - blocking" if blocking else "")),
            suggestion=(f"merge with '{m.other.name}' or make the two skills' purposes clearly distinct" if blocking
                        else f"make sure an agent can tell this skill from '{m.other.name}' by its description")))
    return out


def discover(root: Path, limits: safefs.Limits, exclude: set[Path]) -> list[Skill]:
    """Skills under a reference catalog folder, in path order; hidden folders and links are skipped."""
    found: list[Skill] = []
    for dirpath, dirnames, filenames in os.walk(root):  # os.walk does not follow directory links
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d != "node_modules")
        here = Path(dirpath)
        if "SKILL.md" in filenames and here.resolve() not in exclude:
            rel = here.relative_to(root).as_posix()
            key = identity.escape(f"{root.name}/{rel}" if rel != "." else root.name)  # as a run's skill keys are (state.py)
            found.append(Skill(root=here, key=key, limits=limits))
    return found
