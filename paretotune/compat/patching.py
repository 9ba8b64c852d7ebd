"""Run-time swaps of another library's attribute, always undone."""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

Undo = Callable[[], None]


def swap(owner: Any, name: str, value: Any) -> Undo:
    """Set ``owner.name`` to ``value``; returns the function that puts the original back."""
    original = getattr(owner, name)

    def undo() -> None:
        setattr(owner, name, original)

    setattr(owner, name, value)
    return undo


@contextlib.contextmanager
def swapped(owner: Any, name: str, value: Any) -> Iterator[None]:
    """``owner.name`` is ``value`` inside the block, the original again after it (also on an exception)."""
    undo = swap(owner, name, value)
    try:
        yield
    finally:
        undo()


def wrap_method(cls: type, name: str, handler: Callable[[Any, Callable[..., Any], tuple[Any, ...],
                                                         dict[str, Any]], Any]) -> Undo:
    """Replace the method ``name`` defined on ``cls`` itself by one that calls ``handler(self, original, args,
    kwargs)``; returns the function that puts the original back."""
    original = cls.__dict__[name]

    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        return handler(self, original, args, kwargs)

    wrapper.__name__ = name
    wrapper.__wrapped__ = original  # type: ignore[attr-defined]
    setattr(cls, name, wrapper)

    def undo() -> None:
        setattr(cls, name, original)

    return undo
