"""``secrets``: real-looking credentials are found by both engines; documented placeholders are not.

Every behaviour test runs twice: with gitleaks (found beside the interpreter) and with
detect-secrets (gitleaks hidden through ``SKILLEVAL_GITLEAKS_PATH``). A missing gitleaks fails the
gitleaks half; it is never skipped. The fake credentials below are random strings in each
provider's format, made for these tests; none is the AWS documentation key, which gitleaks
allowlists and would make a test pass for the wrong reason.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import make_settings, manifest, rules, run_batched, run_check

from pytest_skilleval import batch, tools
from pytest_skilleval.checks import CheckContext
from pytest_skilleval.results import Severity, Status
from pytest_skilleval.skill import Skill
from pytest_skilleval.tier1 import secrets
from pytest_skilleval.tier1.secrets import GITLEAKS, SecretsCheck

GITHUB_PAT = "ghp_R7kT2mQ9vX4bN8cL1pW6zD3fH5jS0yA2eU7i"
AWS_KEY_ID = "AKIAQ3EGRT7NXK2MBW5P"
GENERIC = "Zq8Xw2Lm9Rt4Vb7Nc1Pd6Hf3Js0Ka5Ge"
KEY_BODY = ("MIIEowIBAAKCAQEAv3Lq8Yk2Qm7Xz9Pb4Nc1Wd6Fe0Ga5Hb8Ic3Jd7Ke2Lf9Mg4Nh1Oi6Pj0Qk5Rl\n"
            "b8Sm3Tn7Uo2Vp9Wq4Xr1Ys6Zt0Au5Bv8Cw3Dx7Ey2Fz9Ga4Hb1Ic6Jd0Ke5Lf8Mg3Nh7Oi2Pj9Qk4\n")
PRIVATE_KEY = f"-----BEGIN RSA PRIVATE KEY-----\n{KEY_BODY}-----END RSA PRIVATE KEY-----\n"
RAW_SECRETS = (GITHUB_PAT, AWS_KEY_ID, GENERIC, KEY_BODY.split("\n")[0])

PLACEHOLDER_DOC = manifest(body="""# Setup

```bash
export OPENAI_API_KEY="sk-proj-Xq3vR8mK2pL9wT4nEXAMPLEcF1hJ6dS0aZ5yE3uI8oP2kM7n"
export OPENAI_API_KEY="sk-…EXAMPLE"
export OPENAI_API_KEY="sk-..."
export ANTHROPIC_API_KEY=<your-key>
export API_KEY=YOUR_API_KEY
api_key = "xxxxxxxxxxxxxxxxxxxxxxxx"
token: "${GITHUB_TOKEN}"
password = "$OPENAI_API_KEY"
GITHUB_TOKEN=ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
secret_key = "your-secret-key-here"
auth_token = "{{ secrets.AUTH_TOKEN }}"
SERVICE_API_KEY=sk-testsecret12345678901234567890
```

```
-----BEGIN RSA PRIVATE KEY-----
MIIEpAIBAAKCAQEA...
-----END RSA PRIVATE KEY-----
```
""")

LOOKALIKES = {
    "references/data.md": '{"rowKey": "6ba7b810-9dad-11d1-80b4-00c04fd430c8", "countryCode": "IN"}\n',
    "references/lock.json": '{"commit": "6b659812db791354da24de4583cd8cc9339443b7"}\n',
    "references/manifest.yaml": "files:\n  - md5: e8c77cea2712a6e3883c49b063ebc816\n",
    "references/model.yaml": "tokenizer_model_name: qwen2.5-vl-7b\nsecret_name: TWILIO_API_KEY\nimage_pull_secret: ngc-pull-secret\n",
    "references/paths.yaml": 'checkpoint: "HuggingFaceTB/SmolVLM-256M-Instruct"\n',
}




@pytest.fixture(params=["gitleaks", "detect-secrets"])
def engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "gitleaks":
        assert tools.locate(GITLEAKS), f"gitleaks is not installed: {GITLEAKS.install_hint}"
    else:
        monkeypatch.setenv(GITLEAKS.override_var, "/nonexistent/gitleaks")
    return str(request.param)


def _scan(make_skill: Callable[..., Skill], files: dict[str, str | bytes], engine: str):  # type: ignore[no-untyped-def]
    result = run_check(SecretsCheck(), make_skill({"SKILL.md": manifest(), **files}))
    assert result.status is Status.PASSED, result.reason
    assert result.metrics["engine"] == engine
    return result


def test_provider_tokens_are_critical(make_skill: Callable[..., Skill], engine: str) -> None:
    result = _scan(make_skill, {"scripts/push.sh": f"#!/bin/bash\nGH={GITHUB_PAT}\ngit push\n",
                                "references/aws.md": f"# AWS\n\nAWS_ACCESS_KEY_ID={AWS_KEY_ID}\n"}, engine)
    by_file = {(f.file, f.line): f for f in result.findings}
    gh, aws = by_file[("scripts/push.sh", 2)], by_file[("references/aws.md", 3)]
    assert gh.rule in {"secrets.github-pat", "secrets.github-token"} and gh.severity is Severity.CRITICAL
    assert aws.rule == "secrets.aws-access-token" and aws.severity is Severity.CRITICAL
    assert gh.evidence == "GH=[REDACTED]"


def test_generic_keyword_secret_is_high(make_skill: Callable[..., Skill], engine: str) -> None:
    result = _scan(make_skill, {"config/settings.yaml": f'service:\n  api_key: "{GENERIC}" # prod\n'}, engine)
    assert len(result.findings) == 1, rules(result)
    f = result.findings[0]
    assert (f.file, f.line, f.severity) == ("config/settings.yaml", 2, Severity.HIGH)
    # detect-secrets sees it twice (entropy and keyword, both HIGH): one finding, the first detector by name
    assert f.rule == {"gitleaks": "secrets.generic-api-key", "detect-secrets": "secrets.base64-high-entropy-string"}[engine]
    assert f.evidence == 'api_key: "[REDACTED]" # prod'


def test_private_key_block_is_critical_but_a_placeholder_block_is_not(make_skill: Callable[..., Skill], engine: str) -> None:
    result = _scan(make_skill, {"references/key.md": f"# Key\n\n{PRIVATE_KEY}",
                                "references/doc.md": "-----BEGIN OPENSSH PRIVATE KEY-----\n...\n-----END OPENSSH PRIVATE KEY-----\n",
                                "evals/case.json": '{"key": "-----BEGIN PRIVATE KEY-----\\n' + KEY_BODY.replace("\n", "\\n") + '"}\n'},
                   engine)
    keys = sorted((f.file, f.line) for f in result.findings if f.rule == "secrets.private-key")
    assert keys == [("evals/case.json", 1), ("references/key.md", 3)]  # the "..." block is documentation
    assert rules(result) == {"secrets.private-key"}  # engines' own header-only private-key rules are replaced
    assert all(f.severity is Severity.CRITICAL for f in result.findings)


def test_documented_placeholders_are_not_flagged(make_skill: Callable[..., Skill], engine: str) -> None:
    result = _scan(make_skill, {"SKILL.md": PLACEHOLDER_DOC, **LOOKALIKES}, engine)
    assert result.findings == [], [f.format_line() for f in result.findings]
    assert result.metrics["placeholders_ignored"] >= 1  # the engine did see them; the allow-list decided


def test_secrets_never_leave_redacted(make_skill: Callable[..., Skill], engine: str) -> None:
    result = _scan(make_skill, {"scripts/push.sh": f"GH={GITHUB_PAT}  # and {AWS_KEY_ID}\n",
                                "config.yaml": f"token: '{GENERIC}'\n", "references/key.md": PRIVATE_KEY}, engine)
    assert len(result.findings) >= 3
    dumped = result.to_json() + "".join(f.format_line() for f in result.findings)
    for raw in RAW_SECRETS:
        assert raw not in dumped
    assert all("[REDACTED]" in (f.evidence or "") for f in result.findings)


def test_inline_allow_comments_cannot_silence_a_finding(make_skill: Callable[..., Skill], engine: str) -> None:
    result = _scan(make_skill, {"scripts/a.sh": f"GH={GITHUB_PAT}  # gitleaks:allow pragma: allowlist secret\n",
                                ".gitleaksignore": "scripts/a.sh:github-pat:1\n"}, engine)
    assert [f.file for f in result.findings] == ["scripts/a.sh"]


def test_links_are_never_followed(tmp_path: Path, make_skill: Callable[..., Skill], engine: str) -> None:
    outside = tmp_path / "outside.env"
    outside.write_text(f"GH={GITHUB_PAT}\n")
    skill = make_skill({"SKILL.md": manifest()})
    os.symlink(outside, skill.root / "linked.env")
    os.link(outside, skill.root / "hardlinked.env")
    result = run_check(SecretsCheck(), Skill(root=skill.root, key="demo-skill"))
    assert result.status is Status.PASSED and result.findings == []


def test_any_text_file_is_scanned_and_binary_files_are_skipped(make_skill: Callable[..., Skill], engine: str) -> None:
    result = _scan(make_skill, {".env": f"GITHUB_TOKEN={GITHUB_PAT}\n", "assets/blob.bin": b"\x00\xff" + GITHUB_PAT.encode()},
                   engine)
    assert [(f.file, f.line) for f in result.findings] == [(".env", 1)]
    assert result.metrics["files"] == 2  # SKILL.md and .env; the binary is not text


def test_result_names_the_engine_and_its_version(make_skill: Callable[..., Skill], engine: str) -> None:
    result = _scan(make_skill, {}, engine)
    assert set(result.tools) == {engine} and result.tools[engine][0].isdigit()
    assert result.metrics == {"engine": engine, "files": 1, "placeholders_ignored": 0}
    assert set(SecretsCheck().tool_versions()) == {engine, "rules"}  # the cache key follows the engine


@pytest.mark.parametrize("value", ["sk-…EXAMPLE", "sk-proj-abcEXAMPLEdef", "<your-key>", "YOUR_API_KEY", "xxxx-xxxx-xxxx",
                                   "${OPENAI_API_KEY}", "$OPENAI_API_KEY", "sk-...", "{{ secrets.TOKEN }}", "sk-your-secret-here"])
def test_allow_list_covers_documented_placeholders(value: str) -> None:
    assert secrets.rules().placeholder(value, "github-pat", "") is not None


@pytest.mark.parametrize("value", [GITHUB_PAT, AWS_KEY_ID, GENERIC, "wJa9XUtnF3EMI7K7MDENGbPxRfiCYzK3qLm8Tn2v"])
def test_allow_list_spares_real_looking_secrets(value: str) -> None:
    for detector in ("github-pat", "generic-api-key"):
        assert secrets.rules().placeholder(value, detector, f'key = "{value}"') is None


def test_identifier_heuristics_apply_to_generic_detectors_only() -> None:
    r = secrets.rules()
    assert r.placeholder("TWILIO_API_KEY", "secret-keyword", "") == "identifier"
    assert r.placeholder("TWILIO_API_KEY", "twilio-api-key", "") is None
    assert r.severity("generic-api-key") is Severity.HIGH and r.severity("stripe-access-token") is Severity.CRITICAL


def _wrapper(tmp_path: Path, real: str, log: Path, body: str | None = None) -> str:
    script = tmp_path / "gitleaks-wrapper"
    script.write_text(f'#!/bin/sh\necho "$*" >> {log}\n' + (body or f'exec {real} "$@"\n'))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


def test_one_gitleaks_process_scans_a_whole_batch(tmp_path: Path, make_skill: Callable[..., Skill],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    real = tools.locate(GITLEAKS)
    assert real, f"gitleaks is not installed: {GITLEAKS.install_hint}"
    log = tmp_path / "calls.log"
    monkeypatch.setenv(GITLEAKS.override_var, _wrapper(tmp_path, real, log))
    skills = [make_skill({"SKILL.md": manifest(f"skill-{n}"), "notes.md": f"GH={GITHUB_PAT}\n" if n == 3 else "clean\n"},
                         name=f"skill-{n}") for n in range(6)]
    results, batcher = run_batched(SecretsCheck(), skills)
    scans = [line for line in log.read_text().splitlines() if line.startswith("dir ")]
    assert len(scans) == 1 and batcher.scanned == 6
    assert [len(r.findings) for r in results] == [0, 0, 0, 1, 0, 0]  # mapped back to the right skill
    assert results[3].findings[0].file == "notes.md"


def _batch_run(tmp_path: Path, make_skill: Callable[..., Skill], monkeypatch: pytest.MonkeyPatch,
               count: int) -> tuple[list[str], batch.Batcher, list[int]]:
    real = tools.locate(GITLEAKS)
    assert real, f"gitleaks is not installed: {GITLEAKS.install_hint}"
    log = tmp_path / "calls.log"
    monkeypatch.setenv(GITLEAKS.override_var, _wrapper(tmp_path, real, log))
    skills = [make_skill({"SKILL.md": manifest(f"skill-{n}"), "notes.md": f"GH={GITHUB_PAT}\n" if n % 97 == 3 else "clean\n"},
                         name=f"skill-{n}") for n in range(count)]
    results, batcher = run_batched(SecretsCheck(), skills)
    found = [len(r.findings) for r in results]
    return [line for line in log.read_text().splitlines() if line.startswith("dir ")], batcher, found


def test_one_gitleaks_process_scans_a_catalog_past_the_default_batch(tmp_path: Path, make_skill: Callable[..., Skill],
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # gitleaks spends ~0.6 s of CPU compiling its rules before it reads a byte: one process for the
    # run, not one per 200 skills (the corpus: 4 processes, 5.0 s of CPU; one: 3.1 s, same findings)
    scans, batcher, found = _batch_run(tmp_path, make_skill, monkeypatch, 250)
    assert len(scans) == 1 and batcher.scanned == 250
    assert [n for n, k in enumerate(found) if k] == [3, 100, 197] and sum(found) == 3


def test_a_batch_past_its_byte_budget_is_split(tmp_path: Path, make_skill: Callable[..., Skill],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    # the texts of a batch are in memory (and staged) while its scanner runs: bytes bound a batch too
    monkeypatch.setattr(batch, "MAX_BATCH_BYTES", 400)
    scans, batcher, found = _batch_run(tmp_path, make_skill, monkeypatch, 12)
    assert len(scans) > 1 and batcher.scanned == 12
    assert [n for n, k in enumerate(found) if k] == [3]


@pytest.mark.parametrize(("body", "kind"), [('echo "panic: out of memory" >&2\nexit 2\n', "crashed"),
                                            ('echo "not json"\nexit 0\n', "bad-output: report is not JSON"),
                                            ("echo '{\"File\": \"0/a.env\"}'\nexit 42\n", "bad-output: report is not a JSON list"),
                                            ("echo '[{\"File\": \"9/a.env\", \"StartLine\": 1}]'\nexit 42\n",
                                             "bad-output: a finding names no file"),
                                            ("echo '[{\"File\": \"0/a.env\", \"StartLine\": \"1\"}]'\nexit 42\n",
                                             "bad-output: a finding names no file")])
def test_a_failing_gitleaks_is_incomplete_not_a_fallback(tmp_path: Path, make_skill: Callable[..., Skill],
                                                         monkeypatch: pytest.MonkeyPatch, body: str, kind: str) -> None:
    monkeypatch.setenv(GITLEAKS.override_var, _wrapper(tmp_path, "", tmp_path / "log", body))
    result = run_check(SecretsCheck(), make_skill({"SKILL.md": manifest(), "a.env": f"GH={GITHUB_PAT}\n"}))
    assert result.status is Status.INCOMPLETE
    assert result.reason and result.reason.startswith(f"gitleaks: {kind}")
    assert GITHUB_PAT not in result.to_json()


@pytest.mark.parametrize("body", ["MIIEpAIBAAKCAQEA" + "x" * 64, "MIIEpAIBAAKCAQEA" + "X" * 64,
                                  "MIIEowIBAAKCAQEAv3Lq8Yk2Qm7Xz9Pb4Nc1EXAMPLEKEYb8Sm3Tn7Uo2Vp9Wq4Xr1Ys6Zt0Au5Bv8Cw3Dx7",
                                  "MIIE...", "<base64 key material>", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"])
def test_private_key_placeholders(body: str) -> None:
    assert list(secrets.private_keys(f"-----BEGIN PRIVATE KEY-----\n{body}\n-----END PRIVATE KEY-----\n")) == []


def test_private_key_forms() -> None:
    assert list(secrets.private_keys(f"intro\n{PRIVATE_KEY}")) == [(2, "RSA PRIVATE KEY")]
    pgp = f"-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: GnuPG v2\n\n{KEY_BODY}-----END PGP PRIVATE KEY BLOCK-----\n"
    assert list(secrets.private_keys(pgp)) == [(1, "PGP PRIVATE KEY")]
    assert list(secrets.private_keys("-----BEGIN PUBLIC KEY-----\n" + KEY_BODY)) == []


def test_the_private_copy_is_private_and_removed() -> None:
    with secrets.stage([(0, "a/b.md", "x"), (3, ".env", "y")]) as st:
        assert (st.root / "0" / "a" / "b.md").read_text() == "x" and st.paths == ["0/a/b.md", "3/.env"]
        assert stat.S_IMODE(st.root.stat().st_mode) == 0o700
        assert st.origin(str(st.root / "3" / ".env")) == (3, ".env") == st.origin("3/.env")
        assert st.origin("/elsewhere/0/a.md") is None
    assert not st.root.exists()


def test_no_report_ever_holds_the_secret(pytester: pytest.Pytester) -> None:
    skill = pytester.path / "skills" / "demo-skill"
    (skill / "scripts").mkdir(parents=True)
    (skill / "SKILL.md").write_text(manifest(body=f"# Demo\n\nexport GITHUB_TOKEN={GITHUB_PAT}\n"))
    (skill / "scripts" / "key.pem").write_text(PRIVATE_KEY)
    result = pytester.runpytest("--skills=skills", "--skilleval-checks=secrets", "--skilleval-report-dir=report",
                                "--junitxml=junit.xml", "-p", "no:cacheprovider", "-rA")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*CRITICAL*SKILL.md:7 possible secret*", "*CRITICAL*scripts/key.pem:1 RSA PRIVATE KEY block*"])
    written = [p for p in pytester.path.rglob("*") if p.is_file() and "skills" not in p.parts]
    assert any(p.name == "results.json" for p in written) and any(p.suffix == ".xml" for p in written)
    for text in [result.stdout.str(), result.stderr.str(), *(p.read_text(errors="replace") for p in written)]:
        for raw in RAW_SECRETS:
            assert raw not in text


def test_the_provider_detector_wins_whichever_detector_reported_first(make_skill: Callable[..., Skill], engine: str) -> None:
    # detect-secrets runs its entropy and keyword detectors before its Stripe one: the later CRITICAL must replace them
    result = _scan(make_skill, {"config/pay.cfg": '[stripe]\n  secret_key = "sk_live_Q7mX2vR9kL4tB8nW3pZ6cF1h"\n'}, engine)
    assert [(f.line, f.rule, f.severity, f.evidence) for f in result.findings] == [
        (2, {"gitleaks": "secrets.stripe-access-token", "detect-secrets": "secrets.stripe-access-key"}[engine],
         Severity.CRITICAL, 'secret_key = "[REDACTED]"')]


def test_a_token_two_detectors_see_is_one_finding_from_the_specific_one(make_skill: Callable[..., Skill], engine: str) -> None:
    # A keyword-style line holding a provider token is seen by a generic detector and a provider one;
    # the provider's CRITICAL must win, and the duplicate must not be kept beside it.
    result = _scan(make_skill, {"config/ci.yaml": f'env:\n  github_token: "{GITHUB_PAT}"\n  api_secret = "{GITHUB_PAT}"\n'}, engine)
    on_lines = [(f.line, f.rule, f.severity) for f in result.findings if f.file == "config/ci.yaml"]
    assert sorted(line for line, _, _ in on_lines) == [2, 3], on_lines
    for line, rule, severity in on_lines:
        assert severity is Severity.CRITICAL and rule in {"secrets.github-pat", "secrets.github-token"}, (line, rule)


def test_no_report_from_gitleaks_is_no_finding(tmp_path: Path, make_skill: Callable[..., Skill],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(GITLEAKS.override_var, _wrapper(tmp_path, "", tmp_path / "log", "exit 0\n"))
    result = run_check(SecretsCheck(), make_skill({"SKILL.md": manifest(), "notes.md": "clean\n"}))
    assert result.status is Status.PASSED and result.findings == []


def test_evidence_is_the_line_with_the_secret_masked_in_place(make_skill: Callable[..., Skill], engine: str) -> None:
    # the secret at every start column mod 4, on line 1 and on later lines (gitleaks numbers them differently)
    prefixes = ["GH=", "G_H=", "GH_T=", "GH_TO="]
    files = {f"scripts/first{n}.sh": f"{p}{GITHUB_PAT} # deploy\n" for n, p in enumerate(prefixes)}
    files |= {f"scripts/later{n}.sh": f"#!/bin/sh\n\n  export {p}{GITHUB_PAT}  # ci\n" for n, p in enumerate(prefixes)}
    files["scripts/start.sh"] = f"{GITHUB_PAT} is the token\n"
    files["scripts/long.sh"] = "echo ok\n" * 299 + f"GH={GITHUB_PAT}\n"  # line numbers past CPython's small-int cache
    result = _scan(make_skill, files, engine)
    got = {(f.file, f.line): f.evidence for f in result.findings}
    expected = {(f"scripts/first{n}.sh", 1): f"{p}[REDACTED] # deploy" for n, p in enumerate(prefixes)}
    expected |= {(f"scripts/later{n}.sh", 3): f"export {p}[REDACTED]  # ci" for n, p in enumerate(prefixes)}
    expected[("scripts/start.sh", 1)] = "[REDACTED] is the token"
    expected[("scripts/long.sh", 300)] = "GH=[REDACTED]"
    assert got == expected


def test_placeholders_ignored_are_counted_for_their_own_skill(make_skill: Callable[..., Skill], engine: str) -> None:
    placeholder = "SERVICE_API_KEY=sk-testsecret12345678901234567890\n"  # seen once by either engine, then allowed
    clean = make_skill({"SKILL.md": manifest("clean-skill")}, name="clean-skill")
    documented = make_skill({"SKILL.md": manifest(), "notes.txt": placeholder + placeholder.replace("SERVICE", "OTHER")}, name="demo-skill")
    results = SecretsCheck().scan([clean, documented], CheckContext(settings=make_settings()))
    assert [results[s.root].metrics["placeholders_ignored"] for s in (clean, documented)] == [0, 2]
    assert [results[s.root].findings for s in (clean, documented)] == [[], []]
    assert [results[s.root].metrics["files"] for s in (clean, documented)] == [1, 2]


def test_a_private_key_does_not_hide_the_secrets_after_it(make_skill: Callable[..., Skill], engine: str) -> None:
    result = _scan(make_skill, {"a/key.pem": PRIVATE_KEY + f"GH={GITHUB_PAT}\n", "b.env": f"GH={GITHUB_PAT}\n"}, engine)
    assert sorted((f.file, f.line, f.rule.split("-")[0]) for f in result.findings) == [
        ("a/key.pem", 1, "secrets.private"), ("a/key.pem", 5, "secrets.github"), ("b.env", 1, "secrets.github")]


def test_two_tokens_on_one_line_are_both_masked(make_skill: Callable[..., Skill], engine: str) -> None:
    # detect-secrets reports the prefix "ghp" once per line, however many tokens start with it: each must
    # become a finding of its own, and neither may show in the other's evidence
    other = "ghp_Q2nW8xV5cM1bT7kL4pR9zH3fJ6sD0yA5eG1u"
    result = _scan(make_skill, {"scripts/two.sh": f"A={GITHUB_PAT} B={other}\n"}, engine)
    assert [(f.file, f.line, f.evidence) for f in result.findings] == [("scripts/two.sh", 1, "A=[REDACTED] B=[REDACTED]")] * 2
    assert other not in result.to_json() and GITHUB_PAT not in result.to_json()
