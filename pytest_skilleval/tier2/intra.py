"""``<skill>::tier2::dedup``: content a skill says twice, across SKILL.md and its reference files.

Chunks (see :mod:`chunking`) are embedded, chunk pairs at or above the intra threshold (0.80 on
the reference scale, calibrated per backend) are joined into clusters with union-find, and a chat
model labels each cluster DUPLICATE / INTENTIONAL_DETAIL / RELATED_BUT_DISTINCT with a confidence.
Only DUPLICATE becomes a finding: HIGH (blocking) at confidence >= 0.70, MEDIUM below.

Embeddings alone cannot tell a careless repeat from a deliberate summary, so without a chat model
the clusters are *unverified candidates*: advisory findings (MEDIUM when near-verbatim, else LOW)
whose text and the result's ``metrics.mode`` say "embeddings-only". Not a silent pass, not a
failure. A chat call that fails after its retries is an ERROR result: never a silent clean.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import BaseModel, Field

from pytest_skilleval.providers.base import ChatMessage, ChatProvider, ChatRequest
from pytest_skilleval.results import Finding, Severity
from pytest_skilleval.tier2 import calibration
from pytest_skilleval.tier2.chunking import Chunk
from pytest_skilleval.tier2.similarity import UnionFind, pairs_at_least

#: Clusters sent to the chat model per skill; the rest stay unverified candidates (and say so).
MAX_CLASSIFIED = 50
DUPLICATE_CONFIDENCE = 0.70
NEAR_VERBATIM = 0.95
EXCERPT = 1500  # characters of each chunk shown to the classifier
MAX_CLUSTER = 12  # members: larger single-linkage components are split (see _components)
SPLIT_STEP = 0.02

Verdict = Literal["DUPLICATE", "INTENTIONAL_DETAIL", "RELATED_BUT_DISTINCT"]
SYSTEM = ("You review Agent Skills: instructions an AI agent loads into its context window. Repeated content wastes "
          "that window. You are shown passages of one skill that an embedding model found similar. Decide: "
          "DUPLICATE (the same information said again; one copy can go), INTENTIONAL_DETAIL (one passage "
          "deliberately summarises or expands the other, e.g. an overview and its reference section), or "
          "RELATED_BUT_DISTINCT (similar wording, different information). Reply with JSON only.")


class ClusterVerdict(BaseModel):
    verdict: Verdict
    confidence: float = Field(ge=0.0, le=1.0)
    reasoning: str = ""
    suggestion: str = ""


@dataclass(frozen=True)
class Cluster:
    members: tuple[Chunk, ...]
    max_similarity: float  # on the reference scale

    def locations(self, limit: int = MAX_CLUSTER) -> str:
        shown = ", ".join(c.location for c in self.members[:limit])
        return shown + (f" and {len(self.members) - limit} more" if len(self.members) > limit else "")


def find_clusters(chunks: Sequence[Chunk], vectors: np.ndarray, raw_threshold: float,
                  to_reference: calibration.Scale) -> list[Cluster]:
    """Clusters of chunks linked by pairs at >= ``raw_threshold`` or by identical normalised text."""
    links = pairs_at_least(vectors, raw_threshold) if len(chunks) > 1 else []
    edges = [(i, j, float(to_reference(raw))) for i, j, raw in links]
    first_of: dict[str, int] = {}
    for i, chunk in enumerate(chunks):  # verbatim repeats link whatever the model says about them
        j = first_of.setdefault(chunk.digest, i)
        if j != i:
            edges.append((j, i, 1.0))
    edges = [(i, j, 1.0 if chunks[i].digest == chunks[j].digest else s) for i, j, s in edges]
    groups = _components(len(chunks), edges, calibration.INTRA_THRESHOLD)
    clusters = [Cluster(tuple(chunks[i] for i in g), round(min(score, 1.0), 4)) for g, score in groups]
    return sorted(clusters, key=lambda c: (-c.max_similarity, c.members[0].file, c.members[0].start_line))


def _components(n: int, edges: list[tuple[int, int, float]], floor: float) -> list[tuple[list[int], float]]:
    """Union-find components of ``edges`` at >= ``floor``, with their best edge.

    Union-find is single linkage: a chain of merely similar passages (common in long references
    with one template per language) can grow into one cluster of hundreds, which neither a reader
    nor a classifier can use. A component larger than MAX_CLUSTER is split by raising its floor
    until its parts fit; verbatim repeats (score 1.0) always stay together.
    """
    uf = UnionFind(n)
    kept = [e for e in edges if e[2] >= floor]
    for i, j, _s in kept:
        uf.union(i, j)
    by_root: dict[int, list[tuple[int, int, float]]] = {}
    for e in kept:
        by_root.setdefault(uf.find(e[0]), []).append(e)
    out: list[tuple[list[int], float]] = []
    for group in uf.groups():
        inner = by_root[uf.find(group[0])]
        best = max(s for _, _, s in inner)
        if len(group) <= MAX_CLUSTER or floor >= 1.0:
            out.append((group, best))
            continue
        local = {m: k for k, m in enumerate(group)}
        for sub, score in _components(len(group), [(local[i], local[j], s) for i, j, s in inner], min(1.0, floor + SPLIT_STEP)):
            out.append(([group[k] for k in sub], score))
    return out


def _prompt(skill_name: str, cluster: Cluster) -> ChatRequest:
    parts = [f"Skill: {skill_name}", f"Highest similarity between these passages: {cluster.max_similarity:.2f}", ""]
    for n, c in enumerate(cluster.members[:MAX_CLUSTER], 1):  # a verbatim cluster may be larger
        where = f"{c.location}" + (f" (section: {c.section})" if c.section else "")
        text = c.text if len(c.text) <= EXCERPT else c.text[:EXCERPT] + " […]"
        parts += [f"--- passage {n}: {where}", text, ""]
    parts.append('Answer as {"verdict": "DUPLICATE|INTENTIONAL_DETAIL|RELATED_BUT_DISTINCT", '
                 '"confidence": 0.0-1.0, "reasoning": "...", "suggestion": "..."}')
    return ChatRequest(messages=(ChatMessage(role="system", content=SYSTEM), ChatMessage(role="user", content="\n".join(parts))),
                       temperature=0.1, max_tokens=400, schema_name="ClusterVerdict")


def classify(chat: ChatProvider, skill_name: str, clusters: Sequence[Cluster]) -> list[ClusterVerdict]:
    """One structured call per cluster; ProviderError (after retries) propagates to the caller."""
    return [chat.structured(_prompt(skill_name, c), ClusterVerdict)[0] for c in clusters]


def _excerpt(chunk: Chunk) -> str:
    text = chunk.normalized
    return text if len(text) <= 120 else text[:117] + "..."


def verified_findings(clusters: Sequence[Cluster], verdicts: Sequence[ClusterVerdict], model: str) -> list[Finding]:
    out = []
    for cluster, v in zip(clusters, verdicts, strict=False):
        if v.verdict != "DUPLICATE":
            continue
        severity = Severity.HIGH if v.confidence >= DUPLICATE_CONFIDENCE else Severity.MEDIUM
        first = cluster.members[0]
        out.append(Finding(
            rule="tier2.duplicate", severity=severity, file=first.file, line=first.start_line,
            message=(f"duplicate content in {len(cluster.members)} places: {cluster.locations()} "
                     f"(similarity {cluster.max_similarity:.2f}; {model} says DUPLICATE, confidence {v.confidence:.2f})"
                     + (f": {v.reasoning}" if v.reasoning else "")),
            suggestion=v.suggestion or "keep one copy and refer to it from the other places",
            evidence=_excerpt(first)))
    return out


def candidate_findings(clusters: Sequence[Cluster], why: str) -> list[Finding]:
    """Unverified clusters: advisory, and saying why they were not classified."""
    out = []
    for cluster in clusters:
        first = cluster.members[0]
        severity = Severity.MEDIUM if cluster.max_similarity >= NEAR_VERBATIM else Severity.LOW
        out.append(Finding(
            rule="tier2.duplicate-candidate", severity=severity, file=first.file, line=first.start_line,
            message=(f"possible duplicate in {len(cluster.members)} places: {cluster.locations()} "
                     f"(similarity {cluster.max_similarity:.2f}; unverified, {why})"),
            suggestion="check whether one copy can go, or configure a chat model to classify the cluster",
            evidence=_excerpt(first)))
    return out
