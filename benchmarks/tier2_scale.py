"""Tier 2 at catalog scale: the 754-skill corpus, then synthetic catalogs of 2k, 5k and 10k skills.

For each catalog, in a fresh child process (so peak memory is that catalog's alone) with a cold
embedding cache: embed time (chunking + embedding of every description and body) in wall and CPU
seconds (all threads of the process, and of the child process it starts for a big catalog's
descriptions), similarity time (the blocked all-pairs product and the top matches of every skill),
peak RSS (the process plus that child). Then a second child process over the same cache: the rerun time
(cache lookups + similarity) and its peak RSS. Each row ends with the load average (1 min) before
and after its cold run: on a shared machine the wall time follows the load, the CPU time much less.

Synthetic skills are built from corpus text with a fixed seed (see :func:`synthetic`). With
``--baseline REV`` every catalog also runs on that commit's code (its own copy of this script, from
``git archive``), alternating with this tree, and each pair of rows ends with the ratios. Run::

    .venv/bin/python benchmarks/tier2_scale.py [--corpus ../shared/corpus] [--sizes 2000,5000,10000] [--embedder default]
                                               [--baseline REV] [--no-corpus]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from pytest_skilleval.skill import Skill  # noqa: E402
from pytest_skilleval.tier2 import embedders  # noqa: E402
from pytest_skilleval.tier2.cache import CachedEmbedder, EmbeddingCache  # noqa: E402
from pytest_skilleval.tier2.chunking import chunk_markdown  # noqa: E402
from pytest_skilleval.tier2.inter import CatalogIndex, SkillText  # noqa: E402

_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def corpus_texts(corpus: Path) -> list[SkillText]:
    return [SkillText.of(Skill(root=p.parent, key=str(p.parent.relative_to(corpus)))) for p in sorted(corpus.rglob("SKILL.md"))]


def synthetic(base: list[SkillText], n: int, seed: int = 20261129) -> list[SkillText]:
    """Each synthetic skill is a variant of one corpus skill: most paragraphs from it, some from
    another, shuffled; its description joins a sentence of each. So, like a real catalog, it holds
    families of related skills rather than n independent ones or n near-identical ones."""
    rng = random.Random(seed)
    sentences = [[s for s in _SENTENCE.split(t.description) if len(s) > 20] or [t.description] for t in base]
    paragraphs = [[c.text for c in chunk_markdown(t.body, "SKILL.md") if len(c.text) > 40] for t in base]
    usable = [i for i, p in enumerate(paragraphs) if len(p) >= 5]
    out = []
    for i in range(n):
        primary, other = rng.sample(usable, 2)
        own = rng.sample(paragraphs[primary], max(3, int(len(paragraphs[primary]) * rng.uniform(0.4, 0.9))))
        mixed = own + rng.sample(paragraphs[other], min(len(paragraphs[other]), rng.randint(2, 10)))
        rng.shuffle(mixed)
        description = f"{rng.choice(sentences[primary])} {rng.choice(sentences[other])}"
        body = "\n\n".join([f"# Synthetic skill {i}", *mixed]) + "\n"
        out.append(SkillText(f"synthetic/{i:05d}", f"synthetic-skill-{i}", description, body, f"synthetic/{i:05d}"))
    return out


def _peak_mb() -> float:
    # Linux reports KiB; plus the largest child waited for (the MiniLM process of a big catalog, alive
    # beside this one while it embeds): an upper bound of the two together
    return sum(resource.getrusage(who).ru_maxrss for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)) / 1024


def _cpu_s() -> float:
    # every thread of this process (onnxruntime's pool too) and the children it waited for (the MiniLM
    # process the index starts for a big catalog's descriptions ends before the index is returned)
    return sum(u.ru_utime + u.ru_stime for u in map(resource.getrusage, (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)))


def measure(texts: list[SkillText], cache_dir: Path, embedder: str) -> dict[str, float]:
    """One catalog in this process: build the index (embed) and all top matches (similarity)."""
    raw = embedders.select(embedder)
    wrapped = {e.model_id: CachedEmbedder(e, EmbeddingCache(cache_dir, e.model_id)) for e in (raw.short, raw.chunks)}
    pair = embedders.EmbedderPair(wrapped[raw.short.model_id], wrapped[raw.chunks.model_id])
    started, cpu_started = time.perf_counter(), _cpu_s()
    index = CatalogIndex(texts, [], pair)
    embedded, cpu_embedded = time.perf_counter(), _cpu_s()
    matches = index.all_matches()
    done = time.perf_counter()
    flagged = sum(1 for row in matches for _, score in row if score >= 0.90)
    return {"skills": len(texts), "embed_s": embedded - started, "embed_cpu_s": cpu_embedded - cpu_started,
            "similarity_s": done - embedded, "total_s": done - started,
            "texts_embedded": float(sum(e.embedded for e in wrapped.values())), "pairs_ge_0.90": float(flagged),
            "peak_rss_mb": _peak_mb()}


def child(args: argparse.Namespace) -> int:
    base = corpus_texts(args.corpus)
    texts = base if args.one == 0 else synthetic(base, args.one)
    print(json.dumps(measure(texts, args.cache, args.embedder)))
    return 0


def run_child(size: int, cache: Path, args: argparse.Namespace, script: Path = Path(__file__)) -> dict[str, float]:
    cmd = [sys.executable, str(script), "--one", str(size), "--cache", str(cache), "--corpus", str(args.corpus), "--embedder", args.embedder]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"catalog {size} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=REPO.parent / "shared" / "corpus")
    parser.add_argument("--sizes", default="2000,5000,10000", help="synthetic catalog sizes (the corpus always runs first)")
    parser.add_argument("--embedder", default="default", choices=("default", "static", "minilm"))
    parser.add_argument("--baseline", default=None, help="a commit to run side by side with this tree (alternating)")
    parser.add_argument("--no-corpus", action="store_true", help="synthetic catalogs only")
    parser.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)  # child mode: 0 = the corpus
    parser.add_argument("--cache", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.corpus = args.corpus.resolve()
    if args.one is not None:
        return child(args)
    sizes = ([] if args.no_corpus else [0]) + [int(s) for s in args.sizes.split(",") if s.strip()]
    print(f"embedder={args.embedder}  (each row: cold cache in a fresh process, then a rerun on that cache; {os.cpu_count()} CPUs)")
    print(f"{'catalog':>10} {'embed s':>8} {'embed CPU s':>11} {'similarity s':>12} {'peak MB':>8} | {'rerun s':>8} {'rerun sim s':>11} "
          f"{'rerun MB':>8} {'embedded':>8} | load before/after")
    with tempfile.TemporaryDirectory(prefix="tier2-bench-") as tmp:
        trees = [("", Path(__file__))]
        if args.baseline:
            from tier1_startup import export  # this folder is on sys.path

            (Path(tmp) / "baseline").mkdir()
            # that commit's package and benchmarks: its copy of this script runs its children, importing from there
            base = export(args.baseline, Path(tmp) / "baseline", "benchmarks")
            trees = [("base ", base / "benchmarks" / "tier2_scale.py"), ("this ", Path(__file__))]
        for size in sizes:
            rows = []
            for tag, script in trees:  # alternating: the same load for both, as far as one can tell
                cache = Path(tmp) / f"cache-{tag.strip() or 'this'}-{size}"
                load_before = os.getloadavg()[0]
                cold = run_child(size, cache, args, script)
                load_after = os.getloadavg()[0]
                warm = run_child(size, cache, args, script)
                rows.append(cold)
                label = tag + f"{int(cold['skills'])}" + ("*" if size == 0 else "")
                print(f"{label:>10} {cold['embed_s']:>8.1f} {cold['embed_cpu_s']:>11.1f} {cold['similarity_s']:>12.2f} {cold['peak_rss_mb']:>8.0f} | "
                      f"{warm['total_s']:>8.2f} {warm['similarity_s']:>11.2f} {warm['peak_rss_mb']:>8.0f} {int(warm['texts_embedded']):>8} | "
                      f"{load_before:.1f}/{load_after:.1f}", flush=True)
            if len(rows) == 2:
                base, this = rows
                wall, cpu = base["embed_s"] / this["embed_s"], base["embed_cpu_s"] / this["embed_cpu_s"]
                print(f"{'ratio':>10} embed wall {wall:.2f}x, embed CPU {cpu:.2f}x (base / this); "
                      f"pairs >= 0.90: {int(base['pairs_ge_0.90'])} / {int(this['pairs_ge_0.90'])}", flush=True)
    print("* the real corpus; the others are synthetic catalogs built from its text")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
