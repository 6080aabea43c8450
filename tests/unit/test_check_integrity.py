"""The ``integrity`` check: links and referenced files exist inside the skill; tests are counted,
never imported or run; requirements are pinned."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import CORPUS, manifest, require, rules, run_check, write_skill

from pytest_skilleval.results import CheckResult, Finding, Severity
from pytest_skilleval.skill import Skill
from pytest_skilleval.tier1 import integrity
from pytest_skilleval.tier1.integrity import IntegrityCheck

MakeSkill = Callable[..., Skill]
CHECK = IntegrityCheck()
BODY_LINE = 5  # manifest() puts the first body line of SKILL.md on line 5


def body(*lines: str) -> str:
    return manifest(body="\n".join(lines) + "\n")


def only(result: CheckResult, rule: str) -> Finding:
    hits = [f for f in result.findings if f.rule == rule]
    assert len(hits) == 1, result.findings
    return hits[0]


def test_registered_through_the_hook() -> None:
    assert [c.name for c in integrity.pytest_skilleval_checks(config=None)] == ["integrity"]  # type: ignore[arg-type]


def test_missing_link_target_is_high_with_file_and_line(make_skill: MakeSkill) -> None:
    result = run_check(CHECK, make_skill({"SKILL.md": body("# Demo", "", "Read [the guide](references/guide.md).")}))
    f = only(result, "integrity.missing-file")
    assert (f.severity, f.file, f.line) == (Severity.HIGH, "SKILL.md", BODY_LINE + 2)
    assert "references/guide.md" in f.message


def test_missing_image_is_high(make_skill: MakeSkill) -> None:
    f = only(run_check(CHECK, make_skill({"SKILL.md": body("![diagram](assets/flow.png)")})), "integrity.missing-file")
    assert (f.file, f.line) == ("SKILL.md", BODY_LINE)


def test_missing_html_image_is_high(make_skill: MakeSkill) -> None:
    f = only(run_check(CHECK, make_skill({"SKILL.md": body("<p>", '<img src="assets/logo.svg">', "</p>")})),
             "integrity.missing-file")
    assert (f.file, f.line) == ("SKILL.md", BODY_LINE + 1)


def test_links_that_are_not_missing_files_pass(make_skill: MakeSkill) -> None:
    text = body(
        "See [setup](#setup), [docs](https://example.com/references/none.md), [mail](mailto:a@example.com),",
        "[proto](//cdn.example.com/x.js), [guide](references/my%20guide.md#usage), [q](references/api.md?plain=1),",
        "[dir](references/), ![ok](assets/logo.png), [<placeholder>](references/<name>.md), [root](./SKILL.md)",
        "",
        "```markdown",
        "[in a fence](nowhere.md)",
        "```",
        "",
        "Inline `[in code](nowhere.md)` is not a link either.",
        "",
        "## Setup",
    )
    files = {"SKILL.md": text, "references/my guide.md": "# Guide\n", "references/api.md": "# API\n", "assets/logo.png": b"\x89PNG"}
    result = run_check(CHECK, make_skill(files))
    assert result.findings == [], result.findings
    assert result.metrics["links_checked"] == 10


def test_link_in_another_markdown_file_resolves_from_that_file(make_skill: MakeSkill) -> None:
    files = {"SKILL.md": body("[api](references/api.md)"),
             "references/api.md": "# API\n\nBack to [the skill](../SKILL.md); see [errors](errors.md).\n"}
    f = only(run_check(CHECK, make_skill(files)), "integrity.missing-file")
    assert (f.file, f.line) == ("references/api.md", 3) and "references/errors.md" in f.message


def test_link_leaving_the_skill_is_medium(make_skill: MakeSkill) -> None:
    files = {"SKILL.md": body("Also see [the sibling](../other-skill/SKILL.md)."),
             "references/deep.md": "# Deep\n\n[up two](../../x.md)\n"}
    result = run_check(CHECK, make_skill(files))
    hits = sorted((f.file, f.line, f.severity) for f in result.findings if f.rule == "integrity.link-outside")
    assert hits == [("SKILL.md", BODY_LINE, Severity.MEDIUM), ("references/deep.md", 3, Severity.MEDIUM)]
    assert "integrity.missing-file" not in rules(result)


def test_absolute_link_is_outside(make_skill: MakeSkill) -> None:
    f = only(run_check(CHECK, make_skill({"SKILL.md": body("[etc](/etc/passwd)")})), "integrity.link-outside")
    assert "absolute" in f.message


def test_repeated_link_is_one_finding_listing_the_other_lines(make_skill: MakeSkill) -> None:
    text = body("[a](../x/SKILL.md)", "", "[b](../x/SKILL.md)", "", "[c](../x/SKILL.md)")
    f = only(run_check(CHECK, make_skill({"SKILL.md": text})), "integrity.link-outside")
    assert f.line == BODY_LINE and f"also lines {BODY_LINE + 2}, {BODY_LINE + 4}" in f.message


def test_windows_backslash_link_is_low_and_still_resolved(make_skill: MakeSkill) -> None:
    result = run_check(CHECK, make_skill({"SKILL.md": body("[api](references\\api.md)"), "references/api.md": "# API\n"}))
    f = only(result, "integrity.backslash-path")
    assert (f.severity, f.line) == (Severity.LOW, BODY_LINE)
    assert rules(result) == {"integrity.backslash-path"}


def test_missing_script_in_a_fence_is_high_when_the_folder_ships(make_skill: MakeSkill) -> None:
    text = body("Run:", "", "```bash", "cd \"$SKILL_DIR\"", "python scripts/convert.py --in data.csv", "```")
    files = {"SKILL.md": text, "scripts/other.py": "print('x')\n"}
    f = only(run_check(CHECK, make_skill(files)), "integrity.missing-script")
    assert (f.severity, f.file, f.line) == (Severity.HIGH, "SKILL.md", BODY_LINE + 4)


def test_missing_script_without_its_folder_is_medium(make_skill: MakeSkill) -> None:
    text = body("```bash", "bash scripts/setup.sh", "```")
    f = only(run_check(CHECK, make_skill({"SKILL.md": text})), "integrity.missing-script")
    assert (f.severity, f.line) == (Severity.MEDIUM, BODY_LINE + 1)


@pytest.mark.parametrize("code", ["`references/api.md`", "`${CLAUDE_SKILL_DIR}/scripts/run.py`", "`{baseDir}/assets/t.json`",
                                  "`references/x.md:12`"])
def test_missing_file_named_in_inline_code_is_high(make_skill: MakeSkill, code: str) -> None:
    f = only(run_check(CHECK, make_skill({"SKILL.md": body("Intro line.", f"Open {code} first.")})), "integrity.missing-script")
    assert (f.severity, f.line) == (Severity.HIGH, BODY_LINE + 1)


def test_code_paths_that_do_not_name_a_skill_file_pass(make_skill: MakeSkill) -> None:
    text = body(
        "```bash",
        "python scripts/<name>.py",
        "python scripts/*.py",
        "ls scripts/",
        "python app.py && python src/scripts/build.py",
        "cat /usr/share/scripts/x.sh ~/scripts/y.sh $HOME/scripts/z.sh",
        "curl -O https://example.com/scripts/install.sh",
        "python scripts/{tool}.py references/your-notes.md assets/...",
        "```",
        "Existing: `scripts/ok.py`, `references/api.md#usage`, and `assets/data.csv`.",
    )
    files = {"SKILL.md": text, "scripts/ok.py": "print(1)\n", "references/api.md": "# API\n", "assets/data.csv": "a\n"}
    result = run_check(CHECK, make_skill(files))
    assert [f for f in result.findings if f.rule == "integrity.missing-script"] == []


def test_nested_readme_may_name_scripts_of_its_own_folder(make_skill: MakeSkill) -> None:
    files = {"SKILL.md": body("[tool](references/tool/README.md)"),
             "references/tool/README.md": "# Tool\n\n```bash\npython scripts/run.py\n```\n",
             "references/tool/scripts/run.py": "print(1)\n"}
    assert run_check(CHECK, make_skill(files)).findings == []


def test_catalog_report_files_are_not_checked(make_skill: MakeSkill) -> None:
    files = {"SKILL.md": body("# Demo"), "BENCHMARK.md": "See [card](docs/card.md)\n", "skill-card.md": "[x](nope.md)\n"}
    assert run_check(CHECK, make_skill(files)).findings == []


def test_unpinned_requirement_lines_are_low(make_skill: MakeSkill) -> None:
    req = "# deps\nrequests>=2.31\nflask==3.0.3\n-r base.txt\nnumpy==1.*\ngit+https://example.com/x.git\nrich ; python_version>'3'\n"
    result = run_check(CHECK, make_skill({"SKILL.md": body("# Demo"), "scripts/requirements-dev.txt": req}))
    hits = sorted((f.file, f.line, f.severity) for f in result.findings if f.rule == "integrity.unpinned-requirement")
    assert hits == [("scripts/requirements-dev.txt", n, Severity.LOW) for n in (2, 5, 7)]


MARKER_CODE = "import pathlib\npathlib.Path({marker!r}).write_text('ran')\n"


def _skill_with_booby_trapped_tests(base: Path, marker: Path) -> Path:
    code = MARKER_CODE.format(marker=str(marker))
    return write_skill(base, "tested-skill", {
        "SKILL.md": manifest("tested-skill"), "conftest.py": code, "tests/test_boom.py": code + "def test_x():\n    pass\n",
        "tests/helpers.py": code, "scripts/convert_test.py": code, "scripts/convert.py": code, "web/app.spec.ts": "x\n"})


def test_tests_are_counted_but_never_imported_or_run(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    root = _skill_with_booby_trapped_tests(tmp_path / "skills", marker)
    result = run_check(CHECK, Skill(root=root, key="tested-skill"))
    assert result.metrics["tests_found"] == 4 and result.metrics["tests_executed"] == 0
    assert result.metrics["test_files"] == ["scripts/convert_test.py", "tests/helpers.py", "tests/test_boom.py", "web/app.spec.ts"]
    assert not marker.exists()


def test_a_pytest_run_over_the_skill_never_imports_its_tests(pytester: pytest.Pytester) -> None:
    marker = pytester.path / "marker"
    _skill_with_booby_trapped_tests(pytester.path / "skills", marker)
    result = pytester.runpytest("--skills", "skills", "--skilleval-checks=integrity", "--skilleval-report-dir=", "-q")
    result.assert_outcomes(passed=1)
    assert not marker.exists()


# -- every script and data file parses -------------------------------------------------------------
@pytest.mark.parametrize(("rel", "bad", "line"), [
    ("scripts/run.py", "def f(:\n    pass\n", 1),
    ("scripts/py2.py", "import os\nprint 'hello'\n", 2),
    ("scripts/run.sh", "#!/bin/bash\necho ok\nif then fi\n", 3),
    ("scripts/tool", "#!/usr/bin/env bash\nfor x in; do\n", None),
    ("scripts/app.js", "const x = ;\n", 1),
    ("scripts/mod.mjs", "export default {\n", None),
    ("references/schema.json", '{"a": 1,\n "b": }\n', 2),
    ("references/config.yaml", "a: 1\n  b: [\n", None),
])
def test_script_that_does_not_parse_is_high(make_skill: MakeSkill, rel: str, bad: str, line: int | None) -> None:
    tool = "node" if rel.endswith(("js", ".mjs")) else "bash" if rel.endswith(".sh") or bad.startswith("#!") else None
    require(tool is None or shutil.which(tool) is not None, f"{tool} is not installed")
    result = run_check(CHECK, make_skill({"SKILL.md": manifest(), rel: bad}))
    f = only(result, "integrity.script-syntax")
    assert (f.severity, f.file) == (Severity.HIGH, rel) and "does not parse" in f.message
    if line is not None:
        assert f.line == line
    assert "skilleval-syntax" not in f.message  # the private copy's path never shows, the skill's does


@pytest.mark.parametrize(("rel", "good"), [
    ("scripts/run.py", "import sys\n\ndef main() -> int:\n    return 0\n"),
    ("scripts/run.sh", "#!/bin/bash\nset -euo pipefail\nfor x in a b; do echo \"$x\"; done\n"),
    ("scripts/app.js", "import fs from 'node:fs';\nconsole.log(fs);\n"),
    ("scripts/app.cjs", "const fs = require('fs');\nmodule.exports = fs;\n"),
    ("references/stack.yaml", "Resources:\n  B:\n    Type: x\n    Properties: {Name: !Ref N}\n---\nsecond: doc\n"),
    ("references/data.json", '{"a": [1, 2]}'),
    ("tsconfig.json", '{\n  // comments are fine here\n  "strict": true\n}\n'),
    ("templates/render.py", "def {{ name }}():\n"),
    ("assets/page.json", "{{ data }}"),
    ("scripts/notes.txt", "not code at all {"),
])
def test_files_that_parse_or_are_templates_pass(make_skill: MakeSkill, rel: str, good: str) -> None:
    result = run_check(CHECK, make_skill({"SKILL.md": manifest(), rel: good}))
    assert "integrity.script-syntax" not in rules(result), result.findings


def test_parsed_files_are_counted(make_skill: MakeSkill) -> None:
    result = run_check(CHECK, make_skill({"SKILL.md": manifest(), "scripts/a.py": "x = 1\n", "scripts/b.sh": "echo\n",
                                          "references/c.json": "{}", "references/d.yml": "a: 1\n"}))
    assert result.metrics["files_parsed"] == {"python": 1, "shell": 1, "javascript": 0, "json": 1, "yaml": 1}


def test_nothing_is_run_while_parsing(make_skill: MakeSkill, tmp_path: Path) -> None:
    canary = tmp_path / "ran"
    script = f"#!/bin/bash\ntouch {canary}\n"
    run_check(CHECK, make_skill({"SKILL.md": manifest(), "scripts/x.sh": script, "scripts/y.py": f"open({str(canary)!r}, 'w')\n",
                                 "scripts/z.js": f"require('fs').writeFileSync({str(canary)!r}, '')\n"}))
    assert not canary.exists()


# -- referenced files that are empty, executables without a shebang --------------------------------
def test_referenced_empty_file_is_high(make_skill: MakeSkill) -> None:
    result = run_check(CHECK, make_skill({"SKILL.md": body("# Demo", "", "Read [the guide](references/guide.md).",
                                                           "", "Run `python scripts/run.py`."),
                                          "references/guide.md": "", "scripts/run.py": "", "scripts/__init__.py": ""}))
    empty = sorted((f.line, f.severity, f.message) for f in result.findings if f.rule == "integrity.empty-file")
    assert [(ln, sev) for ln, sev, _ in empty] == [(BODY_LINE + 2, Severity.HIGH), (BODY_LINE + 4, Severity.HIGH)]
    assert "references/guide.md" in empty[0][2] and "scripts/run.py" in empty[1][2]


def test_executable_without_shebang_is_medium(make_skill: MakeSkill) -> None:
    skill = make_skill({"SKILL.md": manifest(), "scripts/a.py": "print('x')\n", "scripts/b.sh": "#!/bin/sh\necho b\n",
                        "scripts/c.py": "print('c')\n"})
    (skill.root / "scripts/a.py").chmod(0o755)
    (skill.root / "scripts/b.sh").chmod(0o755)
    result = run_check(CHECK, skill)
    f = only(result, "integrity.no-shebang")
    assert (f.severity, f.file, f.line) == (Severity.MEDIUM, "scripts/a.py", 1)


def test_syntax_checks_without_shell_or_javascript_need_no_temporary_folder(make_skill: MakeSkill, tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A folder per skill was made for bash/node copies even with no such file (750 over a catalog);
    with no usable temp folder at all, a skill of Python, JSON and YAML is still checked."""
    import tempfile

    skill = make_skill(files={"scripts/ok.py": "x = 1\n", "scripts/bad.py": "def f(:\n", "data.json": "{}", "c.yaml": "a: 1\n"})
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "no-such-folder"))
    result = run_check(IntegrityCheck(), skill)
    assert ("integrity.script-syntax", "scripts/bad.py") in {(f.rule, f.file) for f in result.findings}


def _code_paths_unfiltered(text: str) -> list[str]:
    """_code_paths as it was before its substring pre-filter: the regex on every text."""
    out = []
    for m in integrity._CODE_PATH.finditer(text):
        path = integrity._LINE_SUFFIX.sub("", m.group(1).rstrip(integrity._TRAILING))
        if integrity._FILE_NAME.search(path) and not integrity._PLACEHOLDER.search(path) and "://" not in path:
            out.append(m.group(0)[: m.start(1) - m.start(0)] + path)
    return out


@pytest.mark.parametrize("text", [
    "python scripts/run.py --x", "see references\\guide.md", "cp assets/logo.png .", "./scripts/a.sh",
    "${SKILL_DIR}/data/x.json", "$CLAUDE_SKILL_ROOT/x.py", "{baseDir}/tools/t.py", "${CLAUDE_PLUGIN_ROOT}/bin/x.sh",
    "$MY_SKILL_PATH\\x.ps1", "Scripts/run.py", "src/scripts/a.py", "no path here", ""])
def test_code_paths_prefilter_changes_nothing(text: str) -> None:
    assert list(integrity._code_paths(text)) == _code_paths_unfiltered(text)


def test_code_paths_prefilter_changes_nothing_over_the_corpus() -> None:
    require(CORPUS.is_dir(), f"the shared corpus is not at {CORPUS}")
    lines = 0
    for path in sorted(CORPUS.rglob("*.md")):
        try:
            text = path.read_text("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        for line in text.splitlines():
            lines += 1
            assert list(integrity._code_paths(line)) == _code_paths_unfiltered(line), (path, line)
    assert lines > 100_000


def _refs_three_walks(rel: str, tokens: list) -> list[integrity.Ref]:  # type: ignore[type-arg]
    """What ``_token_refs`` must give: the three walks it replaced (links, then raw HTML, then code), each
    its own pass over the tokens."""
    from pytest_skilleval.skill import markdown_links

    out = [integrity.Ref(link.target, rel, link.line, code=False) for link in markdown_links(tokens)]
    for tok in tokens:
        if tok.type == "html_block" and tok.map:
            for offset, text in enumerate(tok.content.splitlines()):
                out += [integrity.Ref(m.group(1), rel, tok.map[0] + 1 + offset, code=False) for m in integrity._HTML_REF.finditer(text)]
        elif tok.type == "inline" and tok.children:
            line = (tok.map[0] + 1) if tok.map else 0
            for child in tok.children:
                line += child.type in ("softbreak", "hardbreak")
                if child.type == "html_inline":
                    out += [integrity.Ref(m.group(1), rel, line, code=False) for m in integrity._HTML_REF.finditer(child.content)]
    for tok in tokens:
        if tok.type in ("fence", "code_block") and tok.map:
            if not integrity._may_hold_code_path(tok.content):
                continue
            first = tok.map[0] + (2 if tok.type == "fence" else 1)
            for offset, text in enumerate(tok.content.splitlines()):
                out += [integrity.Ref(p, rel, first + offset, code=True) for p in integrity._code_paths(text)]
        elif tok.type == "inline" and tok.children:
            line = (tok.map[0] + 1) if tok.map else 0
            for child in tok.children:
                line += child.type in ("softbreak", "hardbreak")
                if child.type == "code_inline":
                    out += [integrity.Ref(p, rel, line, code=True) for p in integrity._code_paths(child.content)]
    return out


EDGE_DOCUMENT = """# Demo <img src="assets/a.png">

Read [the guide](references/guide.md) and ![logo](assets/logo.png "t"),
then run `python scripts/run.py`\\
and <a href="references/b.md">b</a> **`scripts/x.sh`** [x](y.md) `cp assets/z.json .`

<div><img src="assets/c.png"></div>
<a href='references/d.md'>d</a>

```bash
python scripts/one.py
${SKILL_DIR}/data/x.json
```

    ./scripts/indented.sh

| a | [t](references/t.md) |
|---|---|
| `scripts/cell.py` | <img src="assets/cell.png"> |
"""


def test_one_walk_finds_the_refs_the_three_walks_found() -> None:
    from pytest_skilleval.skill import parse_markdown

    tokens = parse_markdown(EDGE_DOCUMENT, 3)
    got = integrity._token_refs("SKILL.md", tokens)
    assert got == _refs_three_walks("SKILL.md", tokens)
    assert {r.code for r in got} == {True, False} and len(got) >= 15


def test_one_walk_finds_the_refs_the_three_walks_found_over_the_corpus() -> None:
    from pytest_skilleval.skill import parse_markdown

    require(CORPUS.is_dir(), f"the shared corpus is not at {CORPUS}")
    refs = 0
    for path in sorted(CORPUS.rglob("*.md")):
        try:
            text = path.read_text("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        tokens = parse_markdown(text)
        got = integrity._token_refs(path.name, tokens)
        assert got == _refs_three_walks(path.name, tokens), path
        refs += len(got)
    assert refs > 8_000


def test_the_syntax_tools_are_looked_up_only_for_a_file_that_needs_one(make_skill: MakeSkill, monkeypatch: pytest.MonkeyPatch) -> None:
    # searching PATH for bash and node was most of the syntax pass of a skill without scripts
    from pytest_skilleval.tier1 import _syntax
    looked_up: list[str] = []
    real_which = shutil.which
    monkeypatch.setattr(_syntax.shutil, "which", lambda name: looked_up.append(name) or real_which(name))
    run_check(CHECK, make_skill({"SKILL.md": manifest(), "references/data.json": "{}", "scripts/run.py": "pass\n"}))
    assert looked_up == []
    run_check(CHECK, make_skill({"SKILL.md": manifest(), "scripts/a.sh": "echo a\n", "scripts/b.sh": "echo b\n",
                                 "scripts/app.js": "1;\n"}, name="with-scripts"))
    assert sorted(looked_up) == ["bash", "node"]  # once each, for the two shell files and the script
