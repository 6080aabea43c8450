"""Tier 2 inter-skill similarity: bands with the real embedded models, blocked maths, the cache."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import manifest, write_skill

from pytest_skilleval.results import Severity, Status
from pytest_skilleval.skill import Skill
from pytest_skilleval.tier2 import cache, calibration, embedders, inter, similarity
from pytest_skilleval.tier2.cache import CachedEmbedder, EmbeddingCache
from pytest_skilleval.tier2.checks import evaluate_similarity
from pytest_skilleval.tier2.chunking import chunk_markdown
from pytest_skilleval.tier2.inter import CatalogIndex, SkillText

BASE = ("pdf-tables", "Extract tables from PDF files into CSV. Use when the user asks to pull tabular data out of a PDF document.")
# (name, description, expected band against BASE) - the scores are MiniLM's, measured: 0.98, 0.94, 0.81, 0.53, 0.30
CASES = [
    ("pdf-table-extract", "Extract tables from PDF files into CSV files. Use when a user asks to pull tabular data out of PDF documents.",
     "EXACT_DUPLICATE"),
    ("pdf-tables-two", "Turn the tables found in PDF files into CSV files, for users who need tabular data from PDF documents.",
     "HIGH_SIMILARITY"),
    ("spreadsheet-from-pdf", "Read a PDF and build a spreadsheet of its tables.", "SIMILAR"),
    ("pdf-text", "Extract the plain text of a PDF document, page by page.", "LOOSELY_RELATED"),
    ("invoice-reader", "Read supplier invoices and record their totals in the ledger.", None),
]
# Bodies on unrelated topics, so the description decides each pair.
BODIES = ["Water the tomato plants every morning and check the soil for pests.",
          "Tune the guitar strings to standard pitch before each rehearsal.",
          "Knead the dough for ten minutes and let it rise in a warm place.",
          "Record the bird species seen at the feeder each weekend.",
          "Wax the skis and check the bindings before the race.",
          "Sort the library returns by call number before shelving them."]


def _pair(short: embedders.Embedder | None = None) -> embedders.EmbedderPair:
    return embedders.EmbedderPair(CachedEmbedder(short or embedders.load_minilm(), None), CachedEmbedder(embedders.load_static(), None))


def _skills(tmp_path: Path, specs: list[tuple[str, str, str]]) -> list[Skill]:
    out = []
    for name, description, body in specs:
        root = write_skill(tmp_path, name, {"SKILL.md": manifest(name=name, description=description, body=f"# {name}\n\n{body}\n")})
        out.append(Skill(root=root, key=name))
    return out


@pytest.mark.parametrize(("loader", "model_id"), [(embedders.load_minilm, "onnx:all-MiniLM-L6-v2-onnx-int8"),
                                                  (embedders.load_minilm_dq8, "onnx:all-MiniLM-L6-v2-dq8-mha")], ids=["reference", "dq8"])
def test_paraphrases_land_in_their_band_with_the_real_model(tmp_path: Path, loader, model_id: str) -> None:  # type: ignore[no-untyped-def]
    specs = [(*BASE, BODIES[0])] + [(n, d, BODIES[i + 1]) for i, (n, d, _) in enumerate(CASES)]
    skills = _skills(tmp_path, specs)
    index = CatalogIndex([SkillText.of(s) for s in skills], [], _pair(loader()))
    assert index.models == {"description": model_id, "body": "static:minilm-static-256"}
    by_name = {m.other.name: m for m in index.matches(0)}
    for name, _description, band in CASES:
        got = by_name[name].band[0] if name in by_name and by_name[name].band else None
        assert got == band, (name, by_name.get(name))
        if name in by_name:
            assert by_name[name].description[1] >= by_name[name].body[1]  # the description decided it
    result = evaluate_similarity(skills[0], index, 0, threshold=0.50)
    severities = {f.message.split(" (")[0]: f.severity for f in result.findings}
    assert severities == {"EXACT_DUPLICATE": Severity.CRITICAL, "HIGH_SIMILARITY": Severity.HIGH,
                          "SIMILAR": Severity.MEDIUM, "LOOSELY_RELATED": Severity.LOW}
    exact = next(f for f in result.findings if f.severity is Severity.CRITICAL)
    assert "'pdf-table-extract'" in exact.message and "(0.98)" in exact.message  # names the other skill, with the score
    assert exact.line == skills[0].key_line("description")


def test_threshold_filters_what_is_shown_not_the_bands(tmp_path: Path) -> None:
    specs = [(*BASE, BODIES[0])] + [(n, d, BODIES[i + 1]) for i, (n, d, _) in enumerate(CASES[:3])]
    skills = _skills(tmp_path, specs)
    index = CatalogIndex([SkillText.of(s) for s in skills], [], _pair())
    shown = evaluate_similarity(skills[0], index, 0, threshold=0.95)
    assert [f.severity for f in shown.findings] == [Severity.CRITICAL]
    assert shown.metrics["hidden_below_threshold"] == 2
    assert [t["band"] for t in shown.metrics["top"]] == ["EXACT_DUPLICATE", "HIGH_SIMILARITY", "SIMILAR"]
    assert shown.metrics["bands"] == {"EXACT_DUPLICATE": 0.95, "HIGH_SIMILARITY": 0.9, "SIMILAR": 0.75, "LOOSELY_RELATED": 0.5}
    assert shown.metrics["backends"]["body"]["model"] == "static:minilm-static-256"


def test_identical_bodies_are_exact_duplicates_whatever_the_description(tmp_path: Path) -> None:
    body = "Rotate the API keys monthly. Store them in the vault, never in the repository, and revoke the old ones."
    skills = _skills(tmp_path, [("keys-a", "Manage secrets.", body), ("keys-b", "Bake sourdough bread at home.", body)])
    index = CatalogIndex([SkillText.of(s) for s in skills], [], _pair())
    [match] = index.matches(0)
    assert match.band and match.band[0] == "EXACT_DUPLICATE" and match.body[1] == pytest.approx(1.0, abs=1e-3)


def test_a_lone_skill_is_skipped_not_passed(tmp_path: Path) -> None:
    [skill] = _skills(tmp_path, [(*BASE, BODIES[0])])
    index = CatalogIndex([SkillText.of(skill)], [], _pair())
    assert evaluate_similarity(skill, index, 0, threshold=0.75).status is Status.SKIPPED


def test_blocked_top_matches_equal_brute_force(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(3)
    vecs = rng.normal(size=(50, 8)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    full = vecs @ vecs.T
    monkeypatch.setattr(similarity, "BLOCK_ROWS", 7)  # many block seams

    def block(rows: slice) -> np.ndarray:
        out = vecs[rows] @ vecs.T
        return np.where(out >= 0.3, out, -np.inf)

    got = similarity.top_matches(50, block, k=4, exclude_self=True)
    for i in range(50):
        expected = sorted(((j, full[i, j]) for j in range(50) if j != i and full[i, j] >= 0.3), key=lambda t: -t[1])[:4]
        assert [j for j, _ in got[i]] == [j for j, _ in expected]
    pairs = similarity.pairs_at_least(vecs, 0.5)
    assert sorted((i, j) for i, j, _ in pairs) == sorted((i, j) for i in range(50) for j in range(i + 1, 50) if full[i, j] >= 0.5)


def test_calibration_maps_are_monotone_and_invertible() -> None:
    for (model, aspect), scale in calibration.SCALES.items():
        assert list(scale.raw) == sorted(scale.raw) and list(scale.ref) == sorted(scale.ref), (model, aspect)
        for t in (0.5, 0.75, 0.8, 0.9, 0.95):
            assert float(scale(scale.raw_for(t))) == pytest.approx(t, abs=1e-6)
    assert calibration.scale_for("onnx:anything", "body") is calibration.IDENTITY
    grid = np.linspace(-1, 1, 20001, dtype=np.float32).reshape(1, -1)  # the block path (a lookup table) ~ np.interp
    for scale in calibration.SCALES.values():
        lo = scale.raw_for(0.5)
        half_bin = max(np.diff(scale.ref) / np.diff(scale.raw)) * (1 - lo) / calibration.LUT_BINS / 2
        mapped, exact = scale.map_block(grid.copy(), 0.5), np.interp(grid, scale.raw, scale.ref)
        above = grid >= lo + 1e-4
        assert np.abs(mapped[above] - exact[above]).max() <= half_bin + 1e-6
        assert (mapped[grid < lo - 1e-4] == -np.inf).all()  # below the lowest band: no score at all
    assert calibration.IDENTITY.map_block(np.array([[1.001, -1.001, 0.3]], dtype=np.float32), 0.5).tolist() == [[1.0, -np.inf, -np.inf]]


def test_cache_rerun_embeds_nothing_and_packs_merge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = embedders.load_static()
    texts = [f"chunk number {i} about topic {i % 7}" for i in range(40)]
    first = CachedEmbedder(model, EmbeddingCache(tmp_path, model.model_id))
    fresh = first.embed(texts[:20])
    first.embed(texts[20:])
    assert first.embedded == 40
    second = CachedEmbedder(model, EmbeddingCache(tmp_path, model.model_id))  # another process, same folder
    again = second.embed(texts)
    assert second.embedded == 0 and np.allclose(again[:20], fresh, atol=2e-3)
    monkeypatch.setattr(cache, "MERGE_AT", 2)
    for n in range(3):
        second.embed([f"new text {n}"])
    packs = list(second.cache.dir.glob("*.keys.npy"))  # type: ignore[union-attr]
    assert len(packs) <= 2
    third = CachedEmbedder(model, EmbeddingCache(tmp_path, model.model_id))
    third.embed(texts + [f"new text {n}" for n in range(3)])
    assert third.embedded == 0
    other_model = CachedEmbedder(embedders.load_minilm(), EmbeddingCache(tmp_path, embedders.load_minilm().model_id))
    other_model.embed(texts[:2])
    assert other_model.embedded == 2  # keyed by model id: never another model's vectors


def test_read_only_cache_never_writes(tmp_path: Path) -> None:
    model = embedders.load_static()
    ro = CachedEmbedder(model, EmbeddingCache(tmp_path, model.model_id, read_only=True))
    ro.embed(["some text"])
    assert not list(tmp_path.rglob("*.npy"))


def test_the_default_pair_is_the_int8_minilm_for_descriptions_and_the_static_model_for_chunks() -> None:
    pair = embedders.select("default")
    assert (pair.short.model_id, pair.chunks.model_id) == ("onnx:all-MiniLM-L6-v2-dq8-mha", "static:minilm-static-256")
    assert embedders.select("minilm").short.model_id == "onnx:all-MiniLM-L6-v2-onnx-int8"  # the float reference


def test_the_int8_minilm_agrees_with_the_reference() -> None:
    texts = [d for _n, d, _b in CASES] + [BASE[1], "Tune a guitar", ""]
    reference, dq8 = embedders.load_minilm().embed(texts), embedders.load_minilm_dq8().embed(texts)
    assert np.all((reference * dq8).sum(1) > 0.97)


def test_an_int8_minilm_vector_does_not_depend_on_the_other_texts_of_the_call() -> None:
    """Its activations are quantised with one scale per call: one text per call keeps a text's vector its own."""
    model = embedders.load_minilm_dq8()
    texts = [d for _n, d, _b in CASES] + ["A much longer description of something else entirely. " * 10]
    assert np.array_equal(model.embed(texts), np.stack([model.embed([t])[0] for t in texts]))


def test_int8_minilm_texts_run_in_parallel_with_the_vectors_of_one_thread() -> None:
    """Each text runs on one thread, several texts at once: a vector must not depend on how many."""
    from pytest_skilleval.tier2.embedders import onnx_minilm

    texts = [d for _n, d, _b in CASES] + [BASE[1], "Tune a guitar", "", "A much longer description of something else. " * 12]
    one, two = onnx_minilm.OnnxMiniLMEmbedder(1, build="dq8"), onnx_minilm.OnnxMiniLMEmbedder(2, build="dq8")
    assert (one.workers, two.workers) == (1, 2)
    assert np.array_equal(one.embed(texts), two.embed(texts))


def test_the_shipped_int8_minilm_runs_fused_attention_and_gelu() -> None:
    """Issue 12: the exported graph's ~20 nodes of attention per layer and its 5-node GELU are one node each
    (built by models/build_minilm_dq8.py); the unfused graph spent ~30 % of its time between the products."""
    from pytest_skilleval.tier2.embedders import onnx_minilm

    graph = (onnx_minilm.DQ8_DIR / "model.onnx").read_bytes()

    def nodes(op: bytes) -> int:  # a NodeProto's op_type is its field 4: tag 0x22, then the name's length
        return graph.count(b"\x22" + bytes([len(op)]) + op)

    assert nodes(b"MultiHeadAttention") == 6 and nodes(b"Gelu") == 6
    assert nodes(b"Softmax") == nodes(b"IsNaN") == nodes(b"Erf") == 0
    assert nodes(b"MatMulInteger") == 36  # the weight products stay int8


def test_a_changed_int8_model_file_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_skilleval.providers.base import ProviderError
    from pytest_skilleval.tier2.embedders import onnx_minilm

    (tmp_path / "model.onnx").write_bytes((onnx_minilm.DQ8_DIR / "model.onnx").read_bytes()[:-1] + b"\0")
    (tmp_path / "model.json").write_text((onnx_minilm.DQ8_DIR / "model.json").read_text())
    monkeypatch.setattr(onnx_minilm, "DQ8_DIR", tmp_path)
    with pytest.raises(ProviderError, match="sha256"):
        onnx_minilm.OnnxMiniLMEmbedder(build="dq8")


@pytest.mark.parametrize("shared", [False, True], ids=["two-backends", "one-backend"])
def test_description_rows_belong_to_their_skill_whatever_the_length_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                          shared: bool) -> None:
    """Descriptions are embedded in order of length (on a second thread when the backends differ) and
    steps of BATCH; each row must still be its own skill's vector."""
    monkeypatch.setattr(inter, "BATCH", 3)
    descriptions = [d for _n, d, _b in CASES] + [BASE[1], "Short one.", "A much longer description " * 12]
    skills = _skills(tmp_path, [(f"s{i}", d, BODIES[i % len(BODIES)]) for i, d in enumerate(descriptions)])
    texts = [SkillText.of(s) for s in skills]
    minilm = CachedEmbedder(embedders.load_minilm_dq8(), None)
    pair = embedders.EmbedderPair(minilm, minilm) if shared else embedders.EmbedderPair(minilm, CachedEmbedder(embedders.load_static(), None))
    index = CatalogIndex(texts, [], pair, worker=(1, 2))
    alone = minilm.embed([t.short_text for t in texts])
    assert np.array_equal(index.desc, alone)


@pytest.mark.parametrize("loader", [embedders.load_static, embedders.load_minilm, embedders.load_minilm_dq8],
                         ids=["static", "minilm", "minilm-dq8"])
def test_vectors_do_not_depend_on_a_warm_cache(tmp_path: Path, loader) -> None:  # type: ignore[no-untyped-def]
    """A cold run (computing) and a warm run (reading the float16 cache) must see the same vectors, or
    sharded runs that share a cache would differ from one run (found by the 3-shards-merged test)."""
    texts = ["csv-summary: Summarize a CSV file with row counts", "semver-bump: bump a version by the changes", "changelog"]
    inner = loader()
    uncached = CachedEmbedder(inner, None).embed(texts)
    cold = CachedEmbedder(inner, EmbeddingCache(tmp_path, inner.model_id)).embed(texts)
    warm = CachedEmbedder(inner, EmbeddingCache(tmp_path, inner.model_id)).embed(texts)
    assert np.array_equal(cold, warm) and np.array_equal(uncached, warm)


def test_pooled_body_vectors_do_not_depend_on_a_warm_cache(tmp_path: Path) -> None:
    inner = embedders.load_static()
    texts = [SkillText.of(Skill(root=write_skill(tmp_path, n, {"SKILL.md": manifest(n, body=f"# {n}\n\n{body}\n")}), key=n))
             for n, body in (("one", "Parse CSV files and report columns. " * 5), ("two", "Bump semantic versions from commit messages. " * 4))]
    cold = inter.body_vectors(texts, CachedEmbedder(inner, EmbeddingCache(tmp_path / "c", inner.model_id)))
    warm = inter.body_vectors(texts, CachedEmbedder(inner, EmbeddingCache(tmp_path / "c", inner.model_id)))
    assert np.array_equal(cold, warm)


def test_static_vectors_do_not_depend_on_the_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    """The static pass pools every text of a call in one flat array: a text's vector must be what it
    is alone, at any token budget, with unknown tokens, empty texts and a text over the budget."""
    from pytest_skilleval.tier2.embedders import static

    model = embedders.load_static()
    texts = ["Parse CSV files and report columns.", "", "\u2603\u2603 snow", "x " * 300, "Bump versions.", "   "] + BODIES
    alone = np.stack([model.embed([t])[0] for t in texts])
    for budget in (4, 64, 4096):
        monkeypatch.setattr(static, "TOKENS_PER_BATCH", budget)
        assert np.array_equal(model.embed(texts), alone)
    assert not alone[1].any() and not alone[5].any()


def test_pooled_body_vectors_are_length_weighted_means_of_their_chunks(tmp_path: Path) -> None:
    inner = embedders.load_static()
    bodies = ["Parse CSV files and report columns.\n\n- count rows\n- list the header\n", "", "One paragraph only."]
    texts = [SkillText(f"k{i}", f"n{i}", "d", b, f"p{i}") for i, b in enumerate(bodies)]
    got = inter.body_vectors(texts, CachedEmbedder(inner, None))
    for i, body in enumerate(bodies):
        chunks = [c.text for c in chunk_markdown(body, "SKILL.md")]
        if not chunks:
            assert not got[i].any()
            continue
        pooled = (CachedEmbedder(inner, None).embed(chunks) * np.array([len(c) for c in chunks], dtype=np.float32)[:, None]).sum(0)
        expected = (pooled / np.linalg.norm(pooled)).astype(np.float16).astype(np.float32)
        assert np.allclose(got[i], expected / np.linalg.norm(expected), atol=1e-6)


def test_the_index_keeps_no_skill_body_once_it_is_embedded() -> None:
    """Every xdist worker holds the whole catalog's index for the session: it keeps vectors and the
    few words a finding names, not the bodies it embedded (32 KB each here; a catalog of long skills
    held hundreds of MB per worker)."""
    import gc
    import tracemalloc

    static = CachedEmbedder(embedders.load_static(), None)
    pair = embedders.EmbedderPair(static, static)
    n, body_bytes = 100, 32 * 1024

    def build() -> CatalogIndex:
        texts = [SkillText(f"s{i}", f"skill-{i}", f"Does task number {i}.", f"# Task {i}\n\n" + f"step {i} " * (body_bytes // 8), f"/x/s{i}")
                 for i in range(n)]
        return CatalogIndex(texts, [], pair)

    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        index = build()
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert [m.other.key for m in index.matches(0)][:1] and index.entries[5].name == "skill-5"
    assert kept < n * 8 * 1024, f"{kept / n / 1024:.0f} KB kept per skill"


def test_a_failing_description_model_fails_the_index_and_stops_its_steps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Descriptions are embedded on their own thread, every step queued at once: a model error must still
    reach the caller (the item is an ERROR), and the steps after it must not run."""
    from pytest_skilleval.providers.base import ProviderError

    monkeypatch.setattr(inter, "BATCH", 2)
    calls = []

    class Failing(embedders.Embedder):
        model_id, dim = "onnx:failing", 384

        def embed(self, texts):  # type: ignore[no-untyped-def]
            calls.append(len(texts))
            raise ProviderError("failing", "server", "the model went away")

    texts = [SkillText(f"s{i}", f"skill-{i}", f"Does task {i}.", f"# Task {i}\n\nStep {i}.\n", f"/x/s{i}") for i in range(8)]
    pair = embedders.EmbedderPair(CachedEmbedder(Failing(), None), CachedEmbedder(embedders.load_static(), None))
    with pytest.raises(ProviderError, match="went away"):
        CatalogIndex(texts, [], pair)
    assert calls == [2]  # the first step failed; nothing after it was embedded


CHILD_TEXTS = [d for _n, d, _b in CASES] + [BASE[1], "", "Tune a guitar", "Grüße, 東京, emoji \U0001f600 and tabs\tinside",
                                            "A much longer description of something else entirely. " * 40]


def test_the_child_process_computes_the_parents_vectors() -> None:
    """Issue 12: a big catalog's descriptions are embedded by the same int8 MiniLM in a child process;
    every vector must be bitwise the one this process computes (empty, non-ASCII, over 256 tokens)."""
    from pytest_skilleval.tier2.embedders.child import ChildEmbedder

    local = embedders.load_minilm_dq8()
    with ChildEmbedder(local) as child:  # type: ignore[arg-type]
        assert (child.model_id, child.dim) == (local.model_id, local.dim)
        first, second = child.embed(CHILD_TEXTS), child.embed(CHILD_TEXTS[:3])  # one child, several calls
        assert child.embed([]).shape == (0, 384)
    assert np.array_equal(first, local.embed(CHILD_TEXTS)) and np.array_equal(second, first[:3])


def _transparent_huge_pages() -> bool:
    """The kernel gives a process that asks (madvise) huge pages, and glibc's malloc can ask (2.35+)."""
    import platform

    try:
        mode = Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text()
    except OSError:
        return False
    libc, version = platform.libc_ver()
    return "[never]" not in mode and libc == "glibc" and tuple(map(int, version.split("."))) >= (2, 35)


def test_the_child_process_keeps_the_weights_on_huge_pages() -> None:
    """Issue 12: the child asks glibc's malloc for transparent huge pages (GLIBC_TUNABLES), where
    onnxruntime keeps the packed int8 weights streamed once per text: fewer TLB misses (600
    descriptions, one thread, 5 pairs alternating: 4.84-5.40 -> 4.73-5.20 CPU s), the same vectors.
    (glibc rewrites the variable in /proc/PID/environ, so the pages are what is checked.)"""
    from pytest_skilleval.tier2.embedders.child import ChildEmbedder

    local = embedders.load_minilm_dq8()
    with ChildEmbedder(local) as child:  # type: ignore[arg-type]
        vectors = child.embed(CHILD_TEXTS)
        rollup = Path(f"/proc/{child._start().pid}/smaps_rollup").read_text()
    huge_kb = int(next(line.split()[1] for line in rollup.splitlines() if line.startswith("AnonHugePages:")))
    if _transparent_huge_pages():
        assert huge_kb > 0
    assert np.array_equal(vectors, local.embed(CHILD_TEXTS))


def test_the_child_environment_adds_the_huge_page_tunable_to_the_users(monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_skilleval.tier2.embedders.child import child_environment

    monkeypatch.delenv("GLIBC_TUNABLES", raising=False)
    assert child_environment()["GLIBC_TUNABLES"] == "glibc.malloc.hugetlb=1"
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.arena_max=2")
    assert child_environment()["GLIBC_TUNABLES"] == "glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1"
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.hugetlb=0")  # the user's choice stands
    assert child_environment()["GLIBC_TUNABLES"] == "glibc.malloc.hugetlb=0"


def test_the_child_process_imports_nothing_from_the_working_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """pytest runs in the catalog's checkout, which is not trusted: ``python -m`` would put that folder
    first on the child's path, and a ``json.py`` or ``numpy.py`` there would run (found in review)."""
    from pytest_skilleval.tier2.embedders.child import ChildEmbedder

    marker = tmp_path / "ran"
    for name in ("json", "numpy", "struct", "onnxruntime", "tokenizers"):
        (tmp_path / f"{name}.py").write_text(f"open({str(marker)!r}, 'a').write({name!r})\nraise SystemExit(3)\n")
    monkeypatch.chdir(tmp_path)
    local = embedders.load_minilm_dq8()
    with ChildEmbedder(local) as child:  # type: ignore[arg-type]
        vectors = child.embed(CHILD_TEXTS[:2])
    assert not marker.exists(), marker.read_text()
    assert np.array_equal(vectors, local.embed(CHILD_TEXTS[:2]))


def test_a_large_catalog_embeds_its_descriptions_in_a_child_process_with_the_same_vectors(tmp_path: Path,
                                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The index of a catalog from PROCESS_AT skills sends its descriptions to a child process: the same
    description and body vectors as in one process, the child started once, ended and waited for, and
    not started at all when every description is cached."""
    from pytest_skilleval.tier2.embedders import child

    started: list[object] = []
    real_start = child.ChildEmbedder._start

    def spy(self):  # type: ignore[no-untyped-def]
        proc = real_start(self)
        if proc not in started:
            started.append(proc)
        return proc

    monkeypatch.setattr(child.ChildEmbedder, "_start", spy)
    monkeypatch.setattr(inter, "BATCH", 4)
    texts = [SkillText(f"s{i}", f"skill-{i}", d, f"# Skill {i}\n\n{BODIES[i % len(BODIES)]}\n", f"/x/s{i}")
             for i, d in enumerate(CHILD_TEXTS)]

    def build(process_at: int, store: EmbeddingCache | None = None) -> tuple[CatalogIndex, CachedEmbedder]:
        monkeypatch.setattr(inter, "PROCESS_AT", process_at)
        short = CachedEmbedder(embedders.load_minilm_dq8(), store)
        return CatalogIndex(texts, [], embedders.EmbedderPair(short, CachedEmbedder(embedders.load_static(), None)), worker=(1, 2)), short

    alone, _ = build(10**9)
    assert not started
    store = EmbeddingCache(tmp_path, embedders.load_minilm_dq8().model_id)
    split, short = build(len(texts), store)
    assert np.array_equal(split.desc, alone.desc) and np.array_equal(split.body, alone.body)
    assert short.embedded == len(texts) and len(started) == 1 and started[0].returncode == 0  # type: ignore[attr-defined]
    warm, short = build(len(texts), EmbeddingCache(tmp_path, store.model_id))
    assert np.array_equal(warm.desc, alone.desc) and short.embedded == 0 and len(started) == 1


def test_a_child_process_that_dies_is_a_provider_error() -> None:
    from pytest_skilleval.providers.base import ProviderError
    from pytest_skilleval.tier2.embedders.child import ChildEmbedder

    with ChildEmbedder(embedders.load_minilm_dq8()) as child:  # type: ignore[arg-type]
        proc = child._start()
        proc.kill()
        proc.wait()
        with pytest.raises(ProviderError, match="child process failed"):
            child.embed(["Tune a guitar"])


def test_the_child_reports_a_failed_request_and_keeps_serving() -> None:
    import io
    import json
    import struct

    from pytest_skilleval.tier2.embedders import child

    def request(payload: bytes) -> bytes:
        return struct.pack("<Q", len(payload)) + payload

    replies = io.BytesIO()
    child.serve("dq8", 1, io.BytesIO(request(b"not json") + request(json.dumps(["Tune a guitar"]).encode()) + struct.pack("<Q", 0)), replies)
    data = replies.getvalue()
    kind, size = struct.unpack("<cQ", data[:9])
    assert kind == b"e" and b"JSONDecodeError" in data[9:9 + size]
    kind, size = struct.unpack("<cQ", data[9 + size:18 + size])
    assert kind == b"v" and size == 384 * 4


def test_a_call_mixing_cached_repeated_and_new_texts_gets_each_its_own_vector(tmp_path: Path) -> None:
    """Cached rows are gathered pack by pack, repeats and new texts filled in: every row must be bitwise
    what the text gets from a call of its own with nothing cached (float16 precision either way)."""
    model = embedders.load_static()
    a, b, c, d = "Parse CSV files and report columns.", "Bump versions from commits.", "Tune a guitar.", ""
    store = CachedEmbedder(model, EmbeddingCache(tmp_path, model.model_id))
    store.embed([a])
    store.embed([b, a])  # a second pack
    texts = [b, c, a, a, d, c, b, "Knead the dough."]
    got = CachedEmbedder(model, EmbeddingCache(tmp_path, model.model_id)).embed(texts)
    alone = np.stack([CachedEmbedder(model, None).embed([t])[0] for t in texts])
    assert np.array_equal(got, alone)
