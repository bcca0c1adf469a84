"""One registry mechanism for everything a recipe or config names: advantage and KL estimators, rewards, stages.

A registry holds entries of one kind that share one call signature; each entry carries declared metadata
(``level="sequence"`` or ``"token"``, ``role="correctness"``, ...), so callers ask the entry instead of testing
names. Config choices are derived from the registry (``registry.choices()``), so adding an entry is one
decorated definition in one file. Entries may also be registered lazily as ``"module:attr"`` paths, so heavy
modules (sympy, the sandbox) load only when asked for. This module imports nothing from the package: every
layer may use it.

>>> ESTIMATORS = Registry("toy estimator", signature="f(scores) -> Tensor")
>>> @ESTIMATORS.register("double", level="sequence")
... def double(scores):
...     return [2 * s for s in scores]
>>> ESTIMATORS["double"]([1, 2]), ESTIMATORS.meta("double")["level"], ESTIMATORS.choices()
([2, 4], 'sequence', ('double',))
>>> ESTIMATORS["tripple"]
Traceback (most recent call last):
...
KeyError: "unknown toy estimator 'tripple'; choose one of: double"
"""

from __future__ import annotations

import difflib
import importlib
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

T = TypeVar("T")


def resolve_import_path(path: str) -> Any:
    """Import ``"package.module:attr"`` (or ``"package.module.attr"``, or ``"path/to/file.py:attr"``) and return
    the attribute.

    The one place that turns a user's import path into an object; errors name the path and the cause. A module
    that is not installed is looked for in the working directory too (as TRL's grpo script does for its
    `reward_funcs`), so ``my_rewards.my_reward`` finds ``./my_rewards.py`` without PYTHONPATH; a file path
    imports that file as a module named after it (its folder joins ``sys.path``, so the module pickles by name,
    as TRL's trainers and worker processes need).

    >>> resolve_import_path("math:pi") == resolve_import_path("math.pi")
    True
    >>> resolve_import_path("math:nope")
    Traceback (most recent call last):
    ...
    ImportError: cannot import 'math:nope': module 'math' has no attribute 'nope'
    """
    module, _, attr = path.partition(":") if ":" in path else path.rpartition(".")
    if module.endswith(".py") or "/" in module or os.sep in module:
        return _attribute_of_file(path, Path(module), attr)
    if not module or not attr:
        raise ImportError(f"cannot import {path!r}: expected 'package.module:attribute'")
    try:
        return getattr(_import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise ImportError(f"cannot import {path!r}: {exc}") from exc


def _import_module(module: str) -> Any:
    """`importlib.import_module`, falling back to the working directory for a module found there."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        top = module.split(".")[0]
        cwd = os.getcwd()
        local = Path(cwd, f"{top}.py").is_file() or Path(cwd, top, "__init__.py").is_file()
        if exc.name != top or not local or cwd in sys.path:
            raise
        sys.path.append(cwd)  # after the installed packages: a local file never shadows one
        return importlib.import_module(module)


def _attribute_of_file(path: str, file: Path, attr: str) -> Any:
    if not attr:
        raise ImportError(f"cannot import {path!r}: expected 'path/to/file.py:attribute'")
    if not file.is_file():
        raise ImportError(f"cannot import {path!r}: no file {str(file)!r}")
    folder, name = str(file.resolve().parent), file.stem
    if folder not in sys.path:
        sys.path.append(folder)
    try:
        module = importlib.import_module(name)
    except ImportError as exc:
        raise ImportError(f"cannot import {path!r}: {exc}") from exc
    if Path(getattr(module, "__file__", "") or "").resolve() != file.resolve():
        raise ImportError(f"cannot import {path!r}: the module name {name!r} is taken by {module.__file__}; "
                          "rename the file")
    try:
        return getattr(module, attr)
    except AttributeError as exc:
        raise ImportError(f"cannot import {path!r}: {exc}") from exc


def looks_like_import_path(name: str) -> bool:
    """True for ``"pkg.mod:attr"`` / ``"pkg.mod.attr"`` (as opposed to a registry name such as ``"k3+"``)."""
    return ":" in name or ("." in name and all(part.isidentifier() for part in name.replace(":", ".").split(".")))


@dataclass
class _Entry:
    target: Any  # the object, or a "module:attr" string until first use
    meta: dict[str, Any] = field(default_factory=dict)
    path: str | None = None  # the "module:attr" string it was registered with, if any


class Registry(Generic[T]):
    """Name -> object of one kind with one signature, plus per-entry metadata.

    Args:
        kind: what the entries are, used in error messages ("advantage estimator").
        signature: the call signature every entry follows, documented for readers and in ``repr``.
        allow_import_paths: ``get`` also accepts ``"module:attr"`` paths to objects outside the registry.
        check: ``check(name, obj, meta)`` raises when an object registered directly does not follow ``signature``
            or lacks the metadata its callers read, so a misfit fails at registration, not at its first use.
    """

    def __init__(self, kind: str, *, signature: str = "", allow_import_paths: bool = False,
                 check: Callable[[str, Any, dict[str, Any]], None] | None = None):
        self.kind = kind
        self.signature = signature
        self.allow_import_paths = allow_import_paths
        self.check = check
        self._entries: dict[str, _Entry] = {}
        self._aliases: dict[str, str] = {}

    def register(self, name: str, *, aliases: tuple[str, ...] = (), **meta: Any) -> Callable[[T], T]:
        """Decorator: register the decorated object under ``name`` (and ``aliases``) with metadata."""

        def decorator(obj: T) -> T:
            self.add(name, obj, aliases=aliases, **meta)
            return obj

        return decorator

    def add(self, name: str, target: T | str, *, aliases: tuple[str, ...] = (), **meta: Any) -> None:
        """Register ``target`` (an object, or a lazy ``"module:attr"`` string) under ``name``."""
        for key in (name, *aliases):
            if key in self._entries or key in self._aliases:
                raise ValueError(f"{self.kind} {key!r} is already registered")
        if self.check is not None and not isinstance(target, str):
            self.check(name, target, meta)
        self._entries[name] = _Entry(target, dict(meta), target if isinstance(target, str) else None)
        for alias in aliases:
            self._aliases[alias] = name

    def canonical(self, name: str) -> str:
        """The registered name behind ``name`` (resolving aliases); KeyError with suggestions otherwise."""
        if name in self._entries:
            return name
        if name in self._aliases:
            return self._aliases[name]
        known = self.choices(with_aliases=True)
        close = difflib.get_close_matches(name, known, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise KeyError(f"unknown {self.kind} {name!r}{hint}; choose one of: {', '.join(known)}")

    def __getitem__(self, name: str) -> T:
        if self.allow_import_paths and name not in self and looks_like_import_path(name):
            return resolve_import_path(name)
        entry = self._entries[self.canonical(name)]
        if isinstance(entry.target, str):
            entry.target = resolve_import_path(entry.target)
        return entry.target

    get = __getitem__

    def meta(self, name: str) -> dict[str, Any]:
        """Declared metadata of an entry (a copy)."""
        return dict(self._entries[self.canonical(name)].meta)

    def import_path(self, name: str) -> str | None:
        """The ``"module:attr"`` path an entry was registered with (None for an object registered as itself), so
        that callers can name where it lives without importing it."""
        return self._entries[self.canonical(name)].path

    def __contains__(self, name: object) -> bool:
        return name in self._entries or name in self._aliases

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def choices(self, with_aliases: bool = False, **where: Any) -> tuple[str, ...]:
        """Registered names (optionally with aliases), filtered by metadata: ``choices(level="token")``."""
        names = [n for n, e in self._entries.items() if all(e.meta.get(k) == v for k, v in where.items())]
        if with_aliases:
            names += [a for a, n in self._aliases.items() if n in names]
        return tuple(names)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, signature={self.signature!r}, entries={list(self._entries)})"
