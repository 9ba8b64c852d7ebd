"""YAML with budgets: a hostile campaign (billion laughs, 100k-deep nesting, megabytes) is refused in
milliseconds with a one-line error instead of hanging or overflowing the stack.

``yaml.safe_load`` already refuses tags that would run code; what it does not bound is the work *after*
parsing. Aliases make the document a DAG whose expanded tree can be exponentially larger than the text, and
every tree walk (the duplicate-key check, pydantic validation) pays for the expanded size. So:

- the text is limited in size (:data:`MAX_BYTES`) before the scanner sees it;
- nesting depth is counted while composing (the composer recurses; the budget stops it long before Python's
  recursion limit);
- the expanded size is counted on the composed DAG with one memoised pass (linear in the text), and refused
  above :data:`MAX_NODES`, before anything walks the expanded tree;
- duplicate keys are found on the DAG, each node visited once.
"""
from __future__ import annotations

from typing import Any

import yaml

from paretotune.errors import UserError

MAX_BYTES = 1 << 20  # a campaign file is a few KB; 1 MiB leaves room for long ACF lists
MAX_DEPTH = 64  # a campaign nests 4 levels deep
MAX_NODES = 100_000  # scalars + collections after alias expansion


class _Budget(Exception):
    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line, self.message = line, message


class _DepthBoundedLoader(yaml.SafeLoader):
    """SafeLoader whose composer refuses nesting deeper than MAX_DEPTH."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                mark = self.peek_event().start_mark
                raise _Budget(mark.line + 1, f"nested more than {MAX_DEPTH} levels deep")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _expanded_size(root: yaml.Node) -> int:
    """Nodes in the tree with every alias expanded, counted on the DAG (each distinct node once, memoised);
    stops counting once over budget. Iterative: depth is already bounded, but no recursion is needed."""
    size: dict[int, int] = {}
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        if id(node) in size:
            continue
        children = _children(node)
        if done:
            total = 1 + sum(size[id(c)] for c in children)
            size[id(node)] = min(total, MAX_NODES + 1)
            continue
        stack.append((node, True))
        stack.extend((c, False) for c in children if id(c) not in size)
    return size[id(root)]


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def duplicate_key(root: yaml.Node) -> tuple[int, str, str] | None:
    """(line, mapping path, key) of the first key given twice (safe_load would silently keep the last);
    each node is visited once however often aliases repeat it."""
    seen_nodes: set[int] = set()
    stack: list[tuple[yaml.Node, str]] = [(root, "")]
    while stack:
        node, where = stack.pop()
        if id(node) in seen_nodes:
            continue
        seen_nodes.add(id(node))
        if isinstance(node, yaml.MappingNode):
            keys: set[str] = set()
            for key, value in node.value:
                name = str(key.value)
                if name in keys:
                    return key.start_mark.line + 1, where, name
                keys.add(name)
                stack.append((value, f"{where}.{name}" if where else name))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((item, f"{where}[{i}]") for i, item in enumerate(node.value))
    return None


def load_bounded(text: str, where: str) -> Any:
    """Parse one YAML document within the budgets; every failure is a one-line UserError naming ``where``."""
    if len(text) > MAX_BYTES:
        raise UserError(f"{where}: too large for a campaign file ({len(text)} characters; the limit is {MAX_BYTES})")
    loader = None
    try:
        loader = _DepthBoundedLoader(text)  # the reader refuses control characters here
        root = loader.get_single_node()
        if root is None:
            return None
        if _expanded_size(root) > MAX_NODES:
            raise UserError(f"{where}: aliases expand to more than {MAX_NODES} YAML nodes "
                            "(a campaign needs a few hundred)")
        dup = duplicate_key(root)
        if dup is not None:
            at, parent, key = dup
            raise UserError(f"{where}:{at}: {f'{parent}.' if parent else ''}{key}: duplicate key")
        return loader.construct_document(root)
    except _Budget as exc:
        raise UserError(f"{where}:{exc.line}: {exc.message}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = " ".join(str(getattr(exc, "problem", None) or exc).split())  # one line
        raise UserError(f"{where}{line}: not valid YAML ({problem})") from None
    except RecursionError:  # belt and braces: the depth budget should make this unreachable
        raise UserError(f"{where}: nested too deeply") from None
    finally:
        if loader is not None:
            loader.dispose()
