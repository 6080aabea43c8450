"""Tier 1 side by side with SkillEvaluator's batch mode: same skills, same deterministic checks, one run.

SkillEvaluator runs ``schema,pii,license,quality,unicode`` (its keyless Tier 1) through ``validate
<folder>`` on a folder of skills (its catalog mode); we run ``schema,version,unicode,pii,license,
integrity,quality`` at ``-n 0``. The two alternate, ``--repeat`` times each, after one warm-up run of
each (bytecode caches written, as on any machine that has run a tool once). Each figure is the best
of the repeats: wall seconds, and CPU seconds of the process and its children (less noisy on a shared
machine). The ratio is SkillEvaluator's over ours. The machine's load average is printed with them.

SkillEvaluator is not a dependency: install it from a clone into a throwaway venv outside this repo
and point ``--skillevaluator`` (or ``$SKILLEVALUATOR``) at its ``skillevaluator`` script. Without it
the comparison is skipped with a message, and our own figures are still printed:

    python benchmarks/tier1_vs_skillevaluator.py [--skillevaluator PATH] [--corpus ../shared/corpus]
           [--sets anthropic,sample] [--repeat 3] [--full-corpus]

Also printed, from the same run: the ceiling of the ratio for any pytest plugin (SkillEvaluator's CPU
over a pytest run of one trivial test with this plugin off, plus importing the plugin: a plugin whose
items read no skill at all) and for
ours (over our start-up floor), our
start-up floor (one skill, one check: Python, pytest, the plugin and the reports, which no set of
skills can go below), collecting 1,000 generated skills (the whole process, and the collection alone
as pytest reports it), what a plain pytest run of one test pays for the plugin being installed (next
to the same run with ``-p no:skilleval``), importing the plugin (CPU ms, next to importing pytest
itself), and with ``--full-corpus`` our default Tier 1
over the whole corpus. Our runs leave out the pytest plugins of this repo's dev extra (see
``DEV_ONLY_PLUGINS``), which a user's install does not have.
"""

from __future__ import annotations

import argparse
import functools
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_CORPUS = Path(os.environ.get("SKILLEVAL_CORPUS", REPO.parent / "shared" / "corpus"))
OUR_CHECKS = "schema,version,unicode,pii,license,integrity,quality"
THEIR_CHECKS = "schema,pii,license,quality,unicode"
#: pytest plugins of this repo's [dev] extra, which a plain ``pip install pytest-skilleval`` does not
#: bring (hypothesis's plugin alone imports hypothesis at the end of every run: ~0.15 s). Turned off
#: for our runs, so we are measured as a user's install runs, as SkillEvaluator runs from its own venv.
DEV_ONLY_PLUGINS = ("hypothesispytest", "rerunfailures")
#: Settings of this machine's sessions, not Python's defaults (see :func:`env`).
MACHINE_SETTINGS = ("PYTHONDONTWRITEBYTECODE", "PYTEST_ADDOPTS", "PYTHONUNBUFFERED")
#: pytest's own summary line of a ``--collect-only -q`` run: "13000/15000 tests collected (2000 deselected) in 0.90s".
COLLECTED_IN = re.compile(r"collected.* in ([0-9.]+)s")


def env() -> dict[str, str]:
    """Both tools as on a normal machine: bytecode caches allowed, no stray plugin options, Python's
    own buffering (``PYTHONUNBUFFERED``, set in some shells and CI images, makes each of pytest's ~12,000
    progress writes over the corpus a system call to a pipe this script reads: 3-4 s of wall time at
    load 6, 0.08 s without)."""
    out = {k: v for k, v in os.environ.items() if k not in MACHINE_SETTINGS}
    out["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])
    return out


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def timed(cmd: list[str], cwd: Path, ok: tuple[int, ...] = (0, 1)) -> tuple[float, float]:
    """(wall s, CPU s of the child and its children) of one command."""
    wall, cpu, _ = timed_out(cmd, cwd, ok)
    return wall, cpu


def timed_out(cmd: list[str], cwd: Path, ok: tuple[int, ...] = (0, 1)) -> tuple[float, float, str]:
    """:func:`timed`, and what the command printed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env(), capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in ok:
        sys.exit(f"{' '.join(cmd[:4])}... exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    if "Traceback" in proc.stdout or "INTERNALERROR" in proc.stdout:
        sys.exit(f"traceback in output of {' '.join(cmd[:4])}...:\n{proc.stdout[-4000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.stdout


def ours(skills: Path, work: Path, *extra: str) -> list[str]:
    dev_only = [arg for name in DEV_ONLY_PLUGINS for arg in ("-p", f"no:{name}")]
    return [sys.executable, "-m", "pytest", f"--skills={skills}", "-q", "-p", "no:cacheprovider", *dev_only, "-o", "addopts=",
            f"--rootdir={work}", f"--skilleval-report-dir={work}/report", "--skilleval-cache-dir=", "-m", "tier1", "-n", "0", *extra]


def theirs(tool: Path, skills: Path, work: Path) -> list[str]:
    return [str(tool), "validate", str(skills), "--checks", THEIR_CHECKS, "--no-dedup", "-r", "json", "-o", str(work / "se-report")]


def best(runs: list[tuple[float, float]]) -> tuple[float, float]:
    return min(r[0] for r in runs), min(r[1] for r in runs)


def gather(sets: list[str], corpus: Path, into: Path) -> dict[str, Path]:
    """One folder of skill folders per set (SkillEvaluator's batch mode takes a folder of skills)."""
    chosen: dict[str, list[Path]] = {
        "anthropic": sorted(p.parent for p in (corpus / "anthropic-skills").glob("*/SKILL.md"))
                     + sorted(p.parent for p in (REPO / "example_skills").glob("*/SKILL.md")),
        "sample": sorted(p.parent for p in corpus.glob("*/*/SKILL.md"))[::8],
    }
    out = {}
    for name in sets:
        if name not in chosen:
            sys.exit(f"unknown set {name!r} (known: {', '.join(chosen)})")
        folder = into / name
        for skill in chosen[name]:
            target = folder / skill.name
            while target.exists():
                target = target.with_name(target.name + "_")
            shutil.copytree(skill, target, symlinks=True)
        out[name] = folder
    return out


def synthetic(n: int, into: Path) -> Path:
    for i in range(n):
        skill = into / f"skill-{i:04d}"
        skill.mkdir(parents=True)
        (skill / "SKILL.md").write_text(f"---\nname: skill-{i:04d}\ndescription: Does thing {i}. Use when thing {i} is asked for.\n"
                                        "---\n\n# Skill\n\nSteps.\n", encoding="utf-8")
    return into


def import_cpu_ms() -> tuple[float, float]:
    code = ("import time\nt=time.process_time()\nimport pytest\np=time.process_time()-t\n"
            "t=time.process_time()\nimport pytest_skilleval.plugin\nprint(p*1000, (time.process_time()-t)*1000)")
    runs = []
    for _ in range(5):
        out = subprocess.run([sys.executable, "-c", code], env=env(), capture_output=True, text=True, check=True).stdout.split()
        runs.append((float(out[0]), float(out[1])))
    return min(r[0] for r in runs), min(r[1] for r in runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--skillevaluator", type=Path, default=os.environ.get("SKILLEVALUATOR") or shutil.which("skillevaluator"))
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--sets", default="anthropic,sample")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--full-corpus", action="store_true", help="also time our default Tier 1 over the whole corpus at -n 0")
    args = parser.parse_args()
    tool = Path(args.skillevaluator) if args.skillevaluator else None
    if tool is not None and not tool.exists():
        tool = None
    print(f"machine: {os.cpu_count()} cores; python {sys.version.split()[0]}; load average at start: {load()}")
    print(f"our runs: -n 0, reports written, the result cache off, dev-only pytest plugins off ({', '.join(DEV_ONLY_PLUGINS)})")
    if tool is None:
        print("SkillEvaluator not found (--skillevaluator or $SKILLEVALUATOR): the side-by-side comparison is skipped")

    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        folders = gather([s.strip() for s in args.sets.split(",") if s.strip()], args.corpus, base / "sets")
        print(f"\n{'set':<10} {'skills':>6}  {'SkillEvaluator wall/cpu s':>26}  {'pytest-skilleval wall/cpu s':>28}  "
              f"{'ratio wall':>10} {'ratio cpu':>9}  load")
        theirs_cpu: dict[str, float] = {}
        for name, folder in folders.items():
            count = sum(1 for _ in folder.glob("*/SKILL.md"))
            work = base / f"work-{name}"
            work.mkdir()
            run_ours = functools.partial(timed, ours(folder, work, f"--skilleval-checks={OUR_CHECKS}"), work)
            run_theirs = functools.partial(timed, theirs(tool, folder, work), work) if tool else None
            run_ours()  # warm-up: bytecode caches for both tools
            if run_theirs:
                run_theirs()
            mine, other = [], []
            for _ in range(args.repeat):  # alternate, so a change of load hits both alike
                if run_theirs:
                    other.append(run_theirs())
                mine.append(run_ours())
            m_wall, m_cpu = best(mine)
            if other:
                o_wall, o_cpu = best(other)
                theirs_cpu[name] = o_cpu
                print(f"{name:<10} {count:>6}  {o_wall:>12.2f} / {o_cpu:>10.2f}  {m_wall:>13.2f} / {m_cpu:>11.2f}  "
                      f"{o_wall / m_wall:>9.2f}x {o_cpu / m_cpu:>8.2f}x  {load()}")
            else:
                print(f"{name:<10} {count:>6}  {'-':>26}  {m_wall:>13.2f} / {m_cpu:>11.2f}  {'-':>10} {'-':>9}  {load()}")

        one = synthetic(1, base / "one")
        work = base / "work-floor"
        work.mkdir()
        timed(ours(one, work, "--skilleval-checks=version"), work)
        f_wall, f_cpu = best([timed(ours(one, work, "--skilleval-checks=version"), work) for _ in range(args.repeat)])
        print(f"\nstart-up floor: one skill, one check, reports written: {f_wall:.2f} s wall / {f_cpu:.2f} s cpu; load {load()}")

        gen = synthetic(1000, base / "thousand")
        work = base / "work-collect"
        work.mkdir()
        timed(ours(gen, work, "--collect-only"), work, ok=(0, 5))
        runs = [timed_out(ours(gen, work, "--collect-only"), work, ok=(0, 5)) for _ in range(args.repeat)]
        c_wall, c_cpu = best([(w, c) for w, c, _ in runs])
        # pytest's own figure: from the session's start to the end of collection, the process's start-up and exit left out
        phase = min(float(m.group(1)) for _, _, out in runs for m in [COLLECTED_IN.search(out)] if m)
        s_wall, s_cpu = best([timed([sys.executable, "-m", "pytest", "--version"], work) for _ in range(args.repeat)])
        print(f"\ncollecting 1,000 skills: {c_wall:.2f} s wall / {c_cpu:.2f} s cpu for the whole process, of which "
              f"collection itself {phase:.2f} s (pytest's own 'collected in'); pytest --version alone: "
              f"{s_wall:.2f} / {s_cpu:.2f}; load {load()}")
        plain = base / "plain"
        plain.mkdir()
        (plain / "test_plain.py").write_text("def test_plain():\n    pass\n", encoding="utf-8")
        plain_cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=", f"--rootdir={plain}",
                     *[arg for name in DEV_ONLY_PLUGINS for arg in ("-p", f"no:{name}")], "test_plain.py"]
        with_us, without_us = [], []
        for _ in range(args.repeat + 2):  # alternate: what a user's own test run pays for the plugin being installed
            with_us.append(timed(plain_cmd, plain))
            without_us.append(timed([*plain_cmd, "-p", "no:skilleval"], plain))
        (_, w_cpu), (_, wo_cpu) = best(with_us), best(without_us)
        print(f"a plain pytest run of one test, no skill: {w_cpu:.2f} s cpu with the plugin installed, {wo_cpu:.2f} s with "
              f"-p no:skilleval (+{(w_cpu - wo_cpu) * 1000:.0f} ms); load {load()}")
        p_ms, s_ms = import_cpu_ms()
        print(f"importing the plugin: {s_ms:.0f} ms cpu (importing pytest itself: {p_ms:.0f} ms); load {load()}")
        # The most any pytest plugin could reach: a pytest session that collects and runs one trivial test
        # with this plugin off (checks run as items, so no run of them is cheaper than that session), plus
        # importing the plugin, and no skill read at all. ``pytest --version`` starts and stops with no
        # session; it understates that bound by about half. The start-up floor (one skill, one check,
        # reports written) is this plugin's own least run, what its ratio on a set cannot pass.
        for name, cpu in theirs_cpu.items():
            bound = wo_cpu + s_ms / 1000
            print(f"ceiling on {name}: SkillEvaluator {cpu:.2f} s / (a one-test pytest run {wo_cpu:.2f} s + plugin import "
                  f"{s_ms / 1000:.2f} s) = {cpu / bound:.2f}x cpu, for any pytest plugin, reading no skill; "
                  f"/ our start-up floor {f_cpu:.2f} s = {cpu / f_cpu:.2f}x cpu")

        if args.full_corpus:
            work = base / "work-corpus"
            work.mkdir()
            count = sum(1 for _ in args.corpus.glob("*/*/SKILL.md"))
            wall, cpu = timed(ours(args.corpus, work), work)
            print(f"default Tier 1 over the corpus ({count} skills, -n 0): {wall:.2f} s wall / {cpu:.2f} s cpu; load {load()}")


if __name__ == "__main__":
    main()
