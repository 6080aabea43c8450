"""A check item's location is pytest's own (the SKILL.md path relative to the rootdir, no line, the
node's domain), worked out once per skill and shared by its items."""

from __future__ import annotations

import pytest
from conftest import manifest, write_skill

from pytest_skilleval.collect import CheckItem


@pytest.mark.parametrize("where", ["inside", "outside"])
def test_every_item_has_pytests_own_location(pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory, where: str) -> None:
    base = pytester.path / "skills" if where == "inside" else tmp_path_factory.mktemp("elsewhere") / "skills"
    for name in ("alpha", "beta"):
        write_skill(base / "group", name, {"SKILL.md": manifest(name)})
    write_skill(base, "gamma", {"SKILL.md": manifest("gamma")})
    items, _ = pytester.inline_genitems(f"--skills={base}", "-p", "no:cacheprovider", "-n", "0")
    checks = [i for i in items if isinstance(i, CheckItem)]
    assert len({i.path for i in checks}) == 3 and len(checks) > 3
    for item in checks:
        assert item.location == pytest.Item.location.func(item)  # type: ignore[attr-defined]
        assert item.location[0].endswith(f"{item.path.name}/SKILL.md")
    assert len({id(i.location[0]) for i in checks}) == 3  # one path string per skill
