"""Does a shell command *read* a ``SKILL.md``? (Codex has no skill tool: a load is a shell read.)

The rule, per the reference: unwrap ``bash -lc '…'``; split on ``&& || ; | newline``; in each
segment drop wrappers (sudo, env, VAR=val, …) and redirect targets (``> f`` writes ``f``); the verb
must be a reader (cat, sed, head, …) — ``sed -i`` edits, so it is not a read — and the SKILL.md path
must be an operand of *that* verb. ``grep x SKILL.md`` or ``ls SKILL.md`` do not load the skill.
"""

from __future__ import annotations

import re
import shlex

_READERS = frozenset({"cat", "sed", "head", "tail", "bat", "batcat", "less", "more", "type", "get-content", "nl", "awk"})
_WRAPPERS = frozenset({"sudo", "env", "command", "time", "nohup", "builtin", "exec", "nice"})
_SHELLS = re.compile(r"^(?:/usr)?(?:/bin/)?(?:ba|da|k|z)?sh$")
_SPLIT = re.compile(r"&&|\|\||;|\||\n")
_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_REDIRECT = re.compile(r"^\d*(?:>>?|<|&>|>&)(.*)$")


def _tokens(segment: str) -> list[str]:
    try:
        return shlex.split(segment, posix=True)
    except ValueError:  # an unbalanced quote: the shell would refuse to run it, so it reads nothing
        return []


def unwrap(command: str) -> str:
    """``/bin/bash -lc 'cat x'`` → ``cat x`` (repeatedly, for nested wrappers)."""
    for _ in range(3):
        toks = _tokens(command.strip())
        if len(toks) >= 3 and _SHELLS.match(toks[0]) and toks[1].startswith("-") and "c" in toks[1]:
            command = toks[2]
        else:
            break
    return command


def _is_skill_md(token: str) -> bool:
    return token.strip("'\"").lower().endswith("skill.md")


def _segment_read_path(segment: str) -> str | None:
    toks = _tokens(segment)
    operands: list[str] = []
    skip_next = False
    for tok in toks:
        if skip_next:  # the target of a separate `>` token is written, not read
            skip_next = False
            continue
        m = _REDIRECT.match(tok)
        if m:
            skip_next = not m.group(1)
            continue
        if ">" in tok:  # `cat x/SKILL.md>/tmp/o`: the part before the redirect is still an operand
            tok = tok.split(">", 1)[0]
        operands.append(tok)
    while operands and (operands[0] in _WRAPPERS or _ASSIGN.match(operands[0])):
        operands.pop(0)
        while operands and operands[0].startswith("-"):  # the wrapper's own flags (`sudo -E cat …`)
            operands.pop(0)
    if not operands:
        return None
    verb = operands[0].rsplit("/", 1)[-1].lower()
    if verb not in _READERS:
        return None
    args = operands[1:]
    # `sed -i`, `-ni`, `-i.bak`, `--in-place`: an in-place edit; `awk -i inplace` likewise.
    if verb in ("sed", "awk") and any(a.startswith("--in-place") or (a.startswith("-") and not a.startswith("--") and "i" in a[1:])
                                      for a in args):
        return None
    paths = [a for a in args if not a.startswith("-") and _is_skill_md(a)]
    return paths[-1] if paths else None


def skill_read_path(command: str | list[str]) -> str | None:
    """The SKILL.md path the command reads, or None when it does not read one (or only writes it)."""
    if isinstance(command, list):
        command = shlex.join(str(c) for c in command)
    if "skill.md" not in command.lower():
        return None
    inner = unwrap(command)
    segments = _SPLIT.split(inner)
    for seg in segments:
        # `… | tee …/SKILL.md` writes the file: the command is an edit, whatever else it reads.
        toks = _tokens(seg)
        if toks and toks[0] == "tee" and any(_is_skill_md(t) for t in toks[1:]):
            return None
    for seg in segments:
        path = _segment_read_path(seg)
        if path:
            return path
    return None
