"""The ``license`` check: evidence from frontmatter, licence files, SPDX headers and the collection root."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import manifest, rules, run_check, write_skill

from pytest_skilleval.results import CheckResult, Finding, Severity
from pytest_skilleval.skill import Skill
from pytest_skilleval.tier1 import license
from pytest_skilleval.tier1.license import LicenseCheck, declared_ids, identify_text, parse_expression

MakeSkill = Callable[..., Skill]
CHECK = LicenseCheck()

MIT = """MIT License

Copyright (c) 2025 Someone

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction.

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.
"""
# NVIDIA's LICENSE-APACHE starts like this: the copyright line must not make it proprietary.
APACHE = """Copyright (c) 2026 Example Corp. All rights reserved.

                                 Apache License
                           Version 2.0, January 2004
                        http://www.apache.org/licenses/
"""
GPL3 = """                    GNU GENERAL PUBLIC LICENSE
                       Version 3, 29 June 2007

... If this is what you want to do, use the GNU Lesser General Public License
instead of this License.
"""
PROPRIETARY = "© 2025 Acme, Inc. All rights reserved.\n\nFor internal use only. Confidential.\n"


def fm(value: str) -> str:
    """A manifest whose ``license`` sits on line 4."""
    return manifest(extra=f"license: {value}\n")


def only(result: CheckResult, rule: str) -> Finding:
    hits = [f for f in result.findings if f.rule == rule]
    assert len(hits) == 1, result.findings
    return hits[0]


def test_registered_through_the_hook() -> None:
    assert [c.name for c in license.pytest_skilleval_checks(config=None)] == ["license"]  # type: ignore[arg-type]


def test_frontmatter_and_licence_file_that_agree_pass_with_both_sources(make_skill: MakeSkill) -> None:
    result = run_check(CHECK, make_skill({"SKILL.md": fm("MIT"), "LICENSE.txt": MIT}))
    assert result.findings == []
    assert result.metrics["license"] == "MIT (frontmatter + LICENSE.txt)"
    assert result.metrics["license_sources"] == {"MIT": ["frontmatter", "LICENSE.txt"]}
    assert result.metrics["license_inherited"] is False


def test_conflict_between_frontmatter_and_licence_file_is_high(make_skill: MakeSkill) -> None:
    result = run_check(CHECK, make_skill({"SKILL.md": fm("Apache-2.0"), "LICENSE": MIT}))
    f = only(result, "license.conflict")
    assert (f.severity, f.file, f.line) == (Severity.HIGH, "SKILL.md", 4)
    assert "SKILL.md:4: license: Apache-2.0" in (f.evidence or "") and "LICENSE:1: MIT License" in (f.evidence or "")


@pytest.mark.parametrize(("value", "text"), [("MIT OR Apache-2.0", MIT), ("apache-2.0", APACHE), ("Apache 2.0", APACHE),
                                             ("CC-BY-4.0 AND Apache-2.0", APACHE)])
def test_agreeing_expressions_are_no_conflict(make_skill: MakeSkill, value: str, text: str) -> None:
    result = run_check(CHECK, make_skill({"SKILL.md": fm(value), "LICENSE": text}))
    assert result.findings == [], result.findings


def test_all_rights_reserved_atop_an_apache_text_is_not_proprietary(make_skill: MakeSkill) -> None:
    assert identify_text(APACHE) == "Apache-2.0"
    result = run_check(CHECK, make_skill({"SKILL.md": manifest(), "LICENSE": APACHE}))
    assert result.findings == [] and result.metrics["license"] == "Apache-2.0 (LICENSE)"


def test_proprietary_licence_file_is_high_and_critical_under_strict(make_skill: MakeSkill) -> None:
    skill = make_skill({"SKILL.md": fm("Complete terms in LICENSE.txt"), "LICENSE.txt": PROPRIETARY})
    f = only(run_check(CHECK, skill), "license.proprietary")
    assert (f.severity, f.file, f.line) == (Severity.HIGH, "LICENSE.txt", 1)
    assert only(run_check(CHECK, skill, profile="strict"), "license.proprietary").severity is Severity.CRITICAL


def test_proprietary_frontmatter_sentence_is_flagged_at_its_line(make_skill: MakeSkill) -> None:
    result = run_check(CHECK, make_skill({"SKILL.md": fm("NVIDIA Proprietary")}))
    f = only(result, "license.proprietary")
    assert (f.severity, f.file, f.line) == (Severity.HIGH, "SKILL.md", 4)


@pytest.mark.parametrize("value", ["GPL-3.0-only", "AGPL-3.0-or-later", "LGPL-2.1+", "MPL-2.0", "EPL-2.0", "(MIT AND GPL-2.0)"])
def test_copyleft_declaration_is_medium_and_critical_under_strict(make_skill: MakeSkill, value: str) -> None:
    skill = make_skill({"SKILL.md": fm(value)})
    f = only(run_check(CHECK, skill), "license.copyleft")
    assert (f.severity, f.file, f.line) == (Severity.MEDIUM, "SKILL.md", 4)
    assert only(run_check(CHECK, skill, profile="strict"), "license.copyleft").severity is Severity.CRITICAL


def test_copyleft_with_a_permissive_alternative_is_not_copyleft(make_skill: MakeSkill) -> None:
    assert run_check(CHECK, make_skill({"SKILL.md": fm("MIT OR GPL-3.0-or-later")})).findings == []


def test_gpl_text_that_mentions_the_lgpl_is_identified_as_gpl(make_skill: MakeSkill) -> None:
    assert identify_text(GPL3) == "GPL-3.0"
    f = only(run_check(CHECK, make_skill({"SKILL.md": manifest(), "COPYING": GPL3})), "license.copyleft")
    assert (f.file, f.line) == ("COPYING", 1) and "GPL-3.0" in f.message


def test_non_commercial_licence_is_restricted(make_skill: MakeSkill) -> None:
    f = only(run_check(CHECK, make_skill({"SKILL.md": fm("CC-BY-NC-4.0")})), "license.restricted")
    assert f.severity is Severity.MEDIUM


@pytest.mark.parametrize("value", ["Foo-License-1.0", "Unknown", "see the website"])
def test_unknown_id_is_low(make_skill: MakeSkill, value: str) -> None:
    f = only(run_check(CHECK, make_skill({"SKILL.md": fm(value)})), "license.unknown-id")
    assert (f.severity, f.file, f.line) == (Severity.LOW, "SKILL.md", 4)


def test_unrecognised_licence_text_is_low(make_skill: MakeSkill) -> None:
    result = run_check(CHECK, make_skill({"SKILL.md": manifest(), "LICENSE.md": "Do whatever, but be nice.\n"}))
    f = only(result, "license.unknown-id")
    assert (f.severity, f.file) == (Severity.LOW, "LICENSE.md")


def test_no_evidence_is_low_missing_and_medium_under_strict(make_skill: MakeSkill) -> None:
    skill = make_skill({"SKILL.md": manifest()})
    f = only(run_check(CHECK, skill), "license.missing")
    assert (f.severity, f.file) == (Severity.LOW, "SKILL.md")
    assert only(run_check(CHECK, skill, profile="strict"), "license.missing").severity is Severity.MEDIUM
    assert run_check(CHECK, skill).metrics["license"] is None


@pytest.mark.parametrize(("value", "message"), [("Complete terms in LICENSE.txt", "names LICENSE.txt"),
                                                ("LICENSE", "names LICENSE"), ("../LICENSE", "outside the skill")])
def test_frontmatter_naming_an_absent_file_is_medium(make_skill: MakeSkill, value: str, message: str) -> None:
    f = only(run_check(CHECK, make_skill({"SKILL.md": fm(value)})), "license.file-missing")
    assert (f.severity, f.file, f.line) == (Severity.MEDIUM, "SKILL.md", 4) and message in f.message


def test_frontmatter_naming_a_present_file_reads_it(make_skill: MakeSkill) -> None:
    result = run_check(CHECK, make_skill({"SKILL.md": fm("See docs/TERMS.md"), "docs/TERMS.md": MIT}))
    assert result.findings == [] and result.metrics["license_ids"] == ["MIT"]


def test_spdx_header_in_a_script_is_evidence_with_its_line(make_skill: MakeSkill) -> None:
    script = "#!/usr/bin/env python3\n# SPDX-License-Identifier: AGPL-3.0-or-later\nprint('hi')\n"
    result = run_check(CHECK, make_skill({"SKILL.md": manifest(), "scripts/tool.py": script}))
    f = only(result, "license.copyleft")
    assert (f.file, f.line) == ("scripts/tool.py", 2)
    assert "license.missing" not in rules(result)


def test_spdx_header_shown_in_a_code_fence_is_an_example_not_evidence(make_skill: MakeSkill) -> None:
    body = "# Demo\n\nStart every file with:\n\n```python\n# SPDX-License-Identifier: GPL-3.0-only\n```\n"
    result = run_check(CHECK, make_skill({"SKILL.md": manifest(body=body)}))
    assert rules(result) == {"license.missing"}


def _collection(tmp_path: Path, licence: str | None = MIT, extra: str = "") -> tuple[Path, Path]:
    coll = tmp_path / "catalog"
    skill = write_skill(coll / "skills", "demo-skill", {"SKILL.md": manifest(extra=extra)})
    if licence is not None:
        (coll / "LICENSE").write_text(licence, encoding="utf-8")
    return coll, skill


def test_licence_at_the_collection_root_is_inherited(tmp_path: Path) -> None:
    coll, root = _collection(tmp_path)
    result = run_check(CHECK, Skill(root=root, key="skills/demo-skill"), skill_paths=(coll,))
    assert result.findings == []
    assert result.metrics["license"] == "MIT (../../LICENSE)" and result.metrics["license_inherited"] is True


def test_inherited_proprietary_licence_is_reported_against_the_parent_file(tmp_path: Path) -> None:
    coll, root = _collection(tmp_path, PROPRIETARY)
    f = only(run_check(CHECK, Skill(root=root, key="skills/demo-skill"), skill_paths=(coll,)), "license.proprietary")
    assert f.file == "../../LICENSE"


def test_own_declaration_wins_over_the_collection_licence(tmp_path: Path) -> None:
    coll, root = _collection(tmp_path, GPL3, extra="license: Apache-2.0\n")
    result = run_check(CHECK, Skill(root=root, key="skills/demo-skill"), skill_paths=(coll,))
    assert result.findings == [] and result.metrics["license"] == "Apache-2.0 (frontmatter)"


def test_a_catalog_folder_is_listed_once_for_all_its_skills(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every skill of a catalog looks for licence files in the same parent folder: listing it once per
    skill made the check quadratic in the catalog's size (1,000 siblings: 0.39 s, 10,000: ~40 s)."""
    coll, _ = _collection(tmp_path)
    roots = [write_skill(coll / "skills", f"skill-{n}", {"SKILL.md": manifest(name=f"skill-{n}")}) for n in range(20)]
    listed: list[str] = []
    real = os.scandir

    def counting(path: object) -> object:  # the real listing, counted
        listed.append(str(path))
        return real(path)  # type: ignore[arg-type]

    monkeypatch.setattr(license.os, "scandir", counting)
    results = [run_check(CHECK, Skill(root=root, key=f"skills/{root.name}"), skill_paths=(coll,)) for root in roots]
    assert all(r.metrics["license"] == "MIT (../../LICENSE)" for r in results)
    catalog_folders = [p for p in listed if p in (str(coll / "skills"), str(coll))]  # os.scandir also lists each skill
    assert sorted(catalog_folders) == sorted([str(coll / "skills"), str(coll)])


def test_a_changed_catalog_licence_is_read_again(tmp_path: Path) -> None:
    coll, root = _collection(tmp_path)
    assert run_check(CHECK, Skill(root=root, key="skills/demo-skill"), skill_paths=(coll,)).findings == []
    (coll / "LICENSE").write_text(PROPRIETARY + "\n", encoding="utf-8")  # another size: a new file signature
    f = only(run_check(CHECK, Skill(root=root, key="skills/demo-skill"), skill_paths=(coll,)), "license.proprietary")
    assert f.file == "../../LICENSE"
    (coll / "LICENSE").unlink()
    (coll / "COPYING").write_text(MIT, encoding="utf-8")
    result = run_check(CHECK, Skill(root=root, key="skills/demo-skill"), skill_paths=(coll,))
    assert result.findings == [] and result.metrics["license"] == "MIT (../../COPYING)"


def test_nothing_above_the_collection_root_is_read(tmp_path: Path) -> None:
    coll, root = _collection(tmp_path, None)
    (tmp_path / "LICENSE").write_text(MIT, encoding="utf-8")  # above the --skills folder
    result = run_check(CHECK, Skill(root=root, key="skills/demo-skill"), skill_paths=(coll,))
    assert rules(result) == {"license.missing"}


def test_without_a_collection_root_or_git_tree_no_parent_is_read(tmp_path: Path) -> None:
    _, root = _collection(tmp_path)
    assert rules(run_check(CHECK, Skill(root=root, key="demo-skill"))) == {"license.missing"}


def test_git_work_tree_bounds_the_walk_when_no_skills_path_is_given(tmp_path: Path) -> None:
    coll, root = _collection(tmp_path)
    (coll / ".git").mkdir()
    result = run_check(CHECK, Skill(root=root, key="demo-skill"))
    assert result.findings == [] and result.metrics["license_ids"] == ["MIT"]


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")
def test_a_symlinked_parent_licence_is_never_followed(tmp_path: Path) -> None:
    coll, root = _collection(tmp_path, None)
    (tmp_path / "real-license").write_text(MIT, encoding="utf-8")
    (coll / "LICENSE").symlink_to(tmp_path / "real-license")
    result = run_check(CHECK, Skill(root=root, key="skills/demo-skill"), skill_paths=(coll,))
    assert rules(result) == {"license.missing"}


@pytest.mark.parametrize(("text", "expected"), [
    ("MIT", [["MIT"]]), ("mit OR apache-2.0", [["MIT"], ["Apache-2.0"]]),
    ("(MIT OR ISC) AND CC-BY-4.0", [["MIT", "CC-BY-4.0"], ["ISC", "CC-BY-4.0"]]),
    ("GPL-2.0-or-later WITH Classpath-exception-2.0", [["GPL-2.0-or-later"]]),
    ("Complete terms in LICENSE.txt", None), ("MIT AND", None), ("(MIT", None), ("", None)])
def test_parse_expression(text: str, expected: list[list[str]] | None) -> None:
    assert parse_expression(text) == expected


def test_sentences_yield_the_ids_they_name() -> None:
    assert declared_ids("Proprietary. LICENSE.txt has complete terms") == [["Proprietary"]]
    assert declared_ids("Apache License 2.0") == [["Apache-2.0"]]
    assert declared_ids("Complete terms in LICENSE.txt") == []
