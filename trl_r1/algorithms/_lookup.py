"""Name lookup in the algorithm registries with the error type configs and callers expect (ValueError)."""

from __future__ import annotations

from typing import Any

from ..registry import Registry


def lookup(registry: Registry, name: str) -> Any:
    """``registry[name]``, raising ValueError that lists the valid names when ``name`` is unknown."""
    try:
        return registry[name]
    except KeyError as exc:
        raise ValueError(f"{exc.args[0]} (valid: {', '.join(registry.choices())})") from None
