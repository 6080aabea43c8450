"""``skilleval init NAME``: a new skill folder that passes Tier 1 as written.

Frontmatter (name, a description that says what it does, when to use it and when not), the sections
the quality check looks for, an MIT licence, ``evals/evals.json`` (a positive case and a negative
control, typed assertions) and ``evals/triggers.json`` (queries that should and should not load it).
The texts are placeholders an author replaces, worded so that the skill is valid meanwhile.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from datetime import UTC, datetime
from pathlib import Path

from pytest_skilleval import atomic

NAME_RULE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
MAX_NAME = 64


def skill_md(name: str, description: str) -> str:
    title = name.replace("-", " ").title()
    return f"""---
name: {name}
description: {description}
license: MIT
metadata:
  author: your-name
  version: 0.1.0
---
# {title}

State in one or two sentences what this skill does and what the agent gets out of it.

## When to Use

- The user asks for the task this skill does (name the words people use for it).
- A step of a larger job needs it (say which job).
- Do not use for neighbouring tasks it does not handle; name them here and in the description.

## Instructions

1. Check the input the user named exists and is the kind this skill handles.
2. Do the task, one step per line, with the exact command or tool call where one is needed.
3. Report the result in the shape the user needs: short, with the numbers or names they asked for.

## Examples

```text
User: a typical request this skill handles
Agent: the answer it should give, in the shape described above
```

## Error Handling

- If the input is missing or unreadable, say which and stop; do not guess.

## Requirements

- List what must be installed or available (none for an instructions-only skill).

## Limitations

- Say what this skill does not do, so an agent does not stretch it.
"""


def evals_json(name: str) -> str:
    doc = {"skill_name": name, "evals": [
        {"id": f"{name}-001", "prompt": "Replace with a realistic request this skill should handle.",
         "expected_output": "Replace with what a good answer contains.",
         "assertions": [{"type": "skill_invoked", "text": "loaded the skill"},
                        {"type": "contains", "value": "replace-me", "text": "names the key fact of the answer"}]},
        {"id": f"{name}-neg-001", "prompt": "Write a Python function that reverses a string.", "expected_skill": None,
         "expected_output": "A short function such as def reverse(s): return s[::-1].",
         "assertions": [{"type": "skill_not_invoked", "text": "did not load the skill for an unrelated task"},
                        {"type": "contains", "value": "[::-1]", "text": "slices the string backwards"}]}]}
    return json.dumps(doc, indent=2) + "\n"


def triggers_json(name: str) -> str:
    doc = {"queries": [
        {"id": "explicit", "query": f"Use the {name} skill for this task.", "should_trigger": True},
        {"id": "implicit", "query": "Replace with the task in the user's own words, without the skill's name.", "should_trigger": True},
        {"id": "near-miss", "query": "Replace with a neighbouring task the skill does not handle.", "should_trigger": False,
         "note": "near miss: shares words with the skill but needs something else"},
        {"id": "unrelated", "query": "Explain the difference between a list and a tuple in Python.", "should_trigger": False}]}
    return json.dumps(doc, indent=2) + "\n"


MIT = """MIT License

Copyright (c) {year} {holder}

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
"""


def scaffold(parent: Path, name: str, description: str | None = None, *, force: bool = False) -> list[Path]:
    if not NAME_RULE.fullmatch(name) or len(name) > MAX_NAME:
        raise ValueError(f"{name!r} is not a valid skill name: lowercase letters, digits and single hyphens, at most {MAX_NAME}")
    root = parent / name
    description = description or (f"Describe what {name} does in one sentence. Use when the user asks for that task or a step that "
                                  "needs it. Not for neighbouring tasks it does not handle.")
    files = {"SKILL.md": skill_md(name, description), "LICENSE.txt": MIT.format(year=datetime.now(UTC).year, holder="the skill's authors"),
             "evals/evals.json": evals_json(name), "evals/triggers.json": triggers_json(name)}
    existing = [rel for rel in files if (root / rel).exists()]
    if existing and not force:
        raise FileExistsError(f"{root}: {', '.join(existing)} already exist; --force overwrites them")
    return [atomic.write_atomic(root / rel, text) for rel, text in files.items()]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", help="the skill's name: lowercase letters, digits and hyphens (also its folder name)")
    parser.add_argument("--dir", type=Path, default=Path("."), help="where to create the folder (default: here)")
    parser.add_argument("--description", help="the frontmatter description (default: a placeholder to replace)")
    parser.add_argument("--force", action="store_true", help="overwrite files that already exist")


def run(args: argparse.Namespace) -> int:
    try:
        written = scaffold(args.dir, args.name, args.description, force=args.force)
    except (ValueError, FileExistsError, OSError) as exc:
        print(f"skilleval init: {exc}", file=sys.stderr)
        return 2
    for path in written:
        print(path)
    print(f"next: edit {written[0]}, then run: pytest --skills {written[0].parent}")
    return 0
