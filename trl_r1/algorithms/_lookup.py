"""Name lookup in the algorithm registries with the error type configs and callers expect (ValueError)."""

from __future__ import annotations

from typing import Any

from ..registry import Registry


def lookup(registry: Registry, name: str) -> Any:
    """``registry[name]``, raising ValueError when ``name`` is unknown (the registry's message: a close match and
    the valid names, listed once)."""
    try:
        return registry[name]
    except KeyError as exc:
        raise ValueError(exc.args[0]) from None
