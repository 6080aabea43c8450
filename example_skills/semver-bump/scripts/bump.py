#!/usr/bin/env python3
"""Print the next semantic version for a current version and a file of commit subjects."""

from __future__ import annotations

import argparse
import re
import sys

VERSION = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)(?:[-+].*)?$")
BREAKING = re.compile(r"^\w+(\([^)]*\))?!:|BREAKING CHANGE")
FEATURE = re.compile(r"^feat(\([^)]*\))?:")


def next_version(current: str, subjects: list[str]) -> str | None:
    match = VERSION.match(current.strip())
    if match is None:
        raise ValueError(f"not a MAJOR.MINOR.PATCH version: {current!r}")
    major, minor, patch = (int(part) for part in match.groups())
    subjects = [s.strip() for s in subjects if s.strip()]
    if not subjects:
        return None
    if any(BREAKING.search(s) for s in subjects):
        return f"{major + 1}.0.0"
    if any(FEATURE.match(s) for s in subjects):
        return f"{major}.{minor + 1}.0"
    return f"{major}.{minor}.{patch + 1}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("current")
    parser.add_argument("commits", help="file with one commit subject per line")
    args = parser.parse_args(argv)
    try:
        with open(args.commits, encoding="utf-8") as handle:
            result = next_version(args.current, handle.readlines())
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(result if result else "no release needed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
