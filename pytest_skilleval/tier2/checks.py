"""The two Tier 2 checks, contributed through ``pytest_skilleval_checks`` like every other check.

Both block by default; ``--no-block-on-dedup`` makes them advisory (a failure is then reported as
FAILED in every report and shown as ADVISORY, but does not fail the run).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest

from pytest_skilleval.checks import Check, CheckContext, Reads
from pytest_skilleval.providers.base import ChatProvider, Embedder, ProviderError
from pytest_skilleval.results import CheckResult, Finding, Severity
from pytest_skilleval.skill import Skill
from pytest_skilleval.tier2.engine import EmbeddingsOff, Tier2Engine, engine

if TYPE_CHECKING:  # imported where used: every run registers these checks, few run them (numpy, providers)
    from pytest_skilleval.tier2 import inter


class _Tier2Check(Check):
    tier = 2

    def __init__(self, eng: Tier2Engine) -> None:
        self.engine = eng
        self.blocking = eng.settings.block  # type: ignore[misc]  # per run, from --no-block-on-dedup


class DedupCheck(_Tier2Check):
    name = "dedup"
    description = "the skill does not say the same thing twice (SKILL.md and its reference Markdown)"
    # a duplicate inside an unread reference file was never compared: INCOMPLETE, as in Tier 1 (docs/tier2.md)
    reads = Reads(None, accepts=lambda skill, rel: _chunked(skill, rel))

    def run(self, skill: Skill, ctx: CheckContext) -> CheckResult:
        try:
            embedder = self.engine.embedders().chunks
        except EmbeddingsOff as exc:
            return CheckResult.skipped(self.name, str(exc), tier=2)
        except ProviderError as exc:
            return CheckResult.error(self.name, f"no embedder: {exc}", tier=2)
        return evaluate_dedup(skill, embedder, self.engine.chat)


def _chunked(skill: Skill, rel: str) -> bool:
    from pytest_skilleval.tier2.chunking import reads_markdown

    return reads_markdown(skill, rel)


def evaluate_dedup(skill: Skill, embedder: Embedder, chat: Callable[[], ChatProvider | None]) -> CheckResult:
    """The dedup check on one skill; ``chat`` is asked for a provider only when there are clusters."""
    from pytest_skilleval.providers.select import AmbiguousProvider
    from pytest_skilleval.tier2 import calibration, intra
    from pytest_skilleval.tier2.chunking import MIN_DEDUP_CHARS, chunk_skill

    name = DedupCheck.name
    if skill.manifest_text is None:
        return CheckResult.skipped(name, "SKILL.md cannot be read (see the schema check)", tier=2)
    chunks = [c for c in chunk_skill(skill) if len(c.normalized) >= MIN_DEDUP_CHARS]
    try:
        vectors = embedder.embed([c.text for c in chunks])
    except ProviderError as exc:
        return CheckResult.error(name, f"embedding failed: {exc}", tier=2)
    scale = calibration.scale_for(embedder.model_id, "chunk")
    raw_threshold = scale.raw_for(calibration.INTRA_THRESHOLD)
    clusters = intra.find_clusters(chunks, vectors, raw_threshold, scale)
    metrics: dict[str, object] = {
        "chunks": len(chunks), "clusters": len(clusters), "embedder": embedder.model_id,
        "threshold": {"reference": calibration.INTRA_THRESHOLD, "raw": round(raw_threshold, 4), "scale": scale.describe()},
    }
    if not clusters:
        return CheckResult(check=name, tier=2, metrics={**metrics, "mode": "no-clusters"})
    why_none = "no chat model configured"
    try:
        provider = chat()
    except AmbiguousProvider as exc:  # the labels are optional: go on without a model, and say which option settles it
        provider, why_none = None, exc.detail
    except ProviderError as exc:
        return CheckResult.error(name, f"chat provider: {exc}", tier=2, metrics=metrics)
    if provider is None:
        metrics["mode"] = "embeddings-only"
        findings = [_embeddings_only_note(len(clusters), why_none)]
        findings += intra.candidate_findings(clusters, f"embeddings-only: {why_none}")
        return CheckResult(check=name, tier=2, findings=findings, metrics=metrics)
    model = f"{provider.name}:{provider.model}"
    metrics.update(mode="classified", chat_model=model)
    batch, rest = clusters[:intra.MAX_CLASSIFIED], clusters[intra.MAX_CLASSIFIED:]
    try:
        verdicts = intra.classify(provider, skill.name, batch)
    except ProviderError as exc:  # malformed after retries, or transport: never a silent clean
        return CheckResult.error(name, f"cluster classification failed: {exc}", tier=2, metrics=metrics)
    metrics["verdicts"] = [{"locations": c.locations(), "similarity": c.max_similarity, **v.model_dump()}
                           for c, v in zip(batch, verdicts, strict=True)]
    findings = intra.verified_findings(batch, verdicts, model)
    if rest:
        findings += intra.candidate_findings(rest, f"over the limit of {intra.MAX_CLASSIFIED} classified clusters")
    return CheckResult(check=name, tier=2, findings=findings, metrics=metrics)


def _embeddings_only_note(n: int, why: str = "no chat model configured") -> Finding:
    return Finding(rule="tier2.embeddings-only", severity=Severity.INFO, file="SKILL.md",
                   message=f"dedup ran embeddings-only: {n} candidate cluster(s) were not classified by a chat model ({why})",
                   suggestion="configure a chat model to classify them: --skilleval-provider, or one provider API key "
                              "in the environment (docs/providers.md)")


class SimilarityCheck(_Tier2Check):
    name = "similarity"
    description = "the skill does not duplicate another collected skill or a reference-catalog skill"

    def run(self, skill: Skill, ctx: CheckContext) -> CheckResult:
        try:
            index = self.engine.index()
        except EmbeddingsOff as exc:
            return CheckResult.skipped(self.name, str(exc), tier=2)
        except ProviderError as exc:
            return CheckResult.error(self.name, f"embedding failed: {exc}", tier=2)
        return evaluate_similarity(skill, index, self.engine.position(skill.key), self.engine.settings.show_threshold)


def evaluate_similarity(skill: Skill, index: inter.CatalogIndex, position: int | None, threshold: float) -> CheckResult:
    from pytest_skilleval.tier2 import calibration, inter

    name = SimilarityCheck.name
    others = len(index.entries) - 1
    if position is None or others < 1:
        return CheckResult.skipped(name, "no other skill to compare with: collect more skills or pass --skilleval-compare-to", tier=2)
    matches = index.matches(position)
    metrics: dict[str, object] = {
        "compared_with": others, "reference_catalog": len(index.entries) - index.n_collected,
        "shown_threshold": threshold, **calibration.bands_record(index.models),
        "top": [m.as_metric() for m in matches[:10]],
        "hidden_below_threshold": sum(1 for m in matches if m.band is not None and m.score < threshold),
    }
    return CheckResult(check=name, tier=2, findings=inter.findings(skill, matches, threshold, index.models), metrics=metrics)


@pytest.hookimpl
def pytest_skilleval_checks(config: pytest.Config) -> list[Check]:
    eng = engine(config)
    return [DedupCheck(eng), SimilarityCheck(eng)]


def pytest_report_header(config: pytest.Config) -> list[str]:
    eng = engine(config)
    s = eng.settings
    line = f"skilleval tier2: embedder={s.embedder} blocking={'yes' if s.block else 'no (--no-block-on-dedup)'} shown>={s.show_threshold:g}"
    return [line + (f" compare-to={s.compare_to}" if s.compare_to else "")]
