"""The languages the code verifier runs: Python (interpreted per test) and C++ (compiled once per program)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Language:
    """How the sandbox's supervisor turns a program into something it can run per test."""

    name: str
    compile_command: tuple[str, ...] | None = None  # the source path, "-o" and the binary path are appended
    supports_assert: bool = False  # assert tests call the program's functions, which needs a Python program


PYTHON = Language("python", supports_assert=True)
CPP = Language("cpp", compile_command=("/usr/bin/g++", "-std=c++17", "-O2", "-pipe", "-w"))
_ALIASES = {
    "python": PYTHON, "python3": PYTHON, "py": PYTHON, "py3": PYTHON,
    "cpp": CPP, "c++": CPP, "cpp17": CPP, "c++17": CPP, "cxx": CPP,
}


def resolve_language(name: str | None) -> Language:
    """The language for a name as datasets spell it (None means Python).

    >>> resolve_language("C++").name
    'cpp'
    >>> resolve_language(None).name
    'python'
    """
    key = (name or "python").strip().lower()
    if key not in _ALIASES:
        raise ValueError(f"unsupported language {name!r}; supported: python, cpp")
    return _ALIASES[key]
