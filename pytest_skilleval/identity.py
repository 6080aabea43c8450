"""How a skill folder's path is written where it names the skill: its report key (results.json, the cards, the
shards, Tier 2's index, trial records), its card folder and its pytest node names and ids.

A folder name that is not valid UTF-8 decodes (``os.fsdecode``'s ``surrogateescape``) to lone surrogates, which
neither xdist's transport nor a report writer can encode, so such a name is written escaped. The escape is
injective, two folders are never one skill: where a name holds a surrogate or a backslash, each backslash is
written ``\\\\`` and each surrogate ``\\udXXX`` (so the folder literally named ``\\udcff`` and the one named by
the byte 0xff are ``\\\\udcff`` and ``\\udcff``). A name with neither is written as it is: the key and node id
of every ordinary skill are what they always were. Free text (a finding's message, a traceback) is not an
identity: :func:`pytest_skilleval.results.encodable` escapes only its surrogates and keeps its backslashes.
"""

from __future__ import annotations

import re

#: What :func:`escape` rewrites: a backslash, and a str code point in U+D800..U+DFFF.
_ESCAPED = re.compile("[\\\\\ud800-\udfff]")
#: What :func:`unescape` reads back: a doubled backslash, or a surrogate's escape.
_ESCAPE = re.compile(r"\\(?:\\|u(d[89a-f][0-9a-f]{2}))")


def needs_escape(text: str) -> bool:
    """Whether :func:`escape` changes ``text``: it holds a backslash or a surrogate."""
    return _ESCAPED.search(text) is not None


def escape(text: str) -> str:
    """``text`` as an identity: each backslash doubled and each surrogate written ``\\udXXX``, UTF-8 encodable;
    ``text`` itself when it holds neither."""
    if _ESCAPED.search(text) is None:
        return text
    return _ESCAPED.sub(lambda m: "\\\\" if m.group() == "\\" else f"\\u{ord(m.group()):04x}", text)


def unescape(text: str) -> str:
    """The text :func:`escape` wrote ``text`` from (a node id's path back to the folder's)."""
    if "\\" not in text:
        return text
    return _ESCAPE.sub(lambda m: "\\" if m.group(1) is None else chr(int(m.group(1), 16)), text)
