"""The size of YAML data once aliases are expanded, counted on the node graph: the one guard against
alias bombs and self-containing data, used by the frontmatter parser and the eval-file loader."""

from __future__ import annotations

import yaml


def expanded_size(root: yaml.Node, cap: int, *, count_keys: bool = True) -> int | None:
    """Values ``root`` holds once aliases are expanded (``count_keys``: mapping keys count too), at most
    ``cap + 1``; counted without expanding or recursing, so neither a YAML bomb nor nesting depth costs
    anything. None when an alias refers to a node that contains it (``name: &a [*a]``)."""
    size: dict[int, int] = {}
    open_nodes: set[int] = set()
    todo: list[tuple[yaml.Node, bool]] = [(root, False)]
    while todo:
        node, children_done = todo.pop()
        if id(node) in size:
            continue
        kids = _children(node, count_keys)
        if children_done:
            open_nodes.discard(id(node))
            size[id(node)] = min(cap + 1, 1 + sum(size[id(k)] for k in kids))
        elif id(node) in open_nodes:
            return None
        else:
            open_nodes.add(id(node))
            todo.append((node, True))
            todo.extend((k, False) for k in kids if id(k) not in size)
    return size[id(root)]


def _children(node: yaml.Node, count_keys: bool) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair] if count_keys else [v for _, v in node.value]
    return list(node.value) if isinstance(node, yaml.SequenceNode) else []
