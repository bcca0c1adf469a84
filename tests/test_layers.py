"""The layering DESIGN.md promises, read from the source: each layer imports only the layers below it, the pure
layers import no TRL, and no module imports its way back into itself (module-level imports, lazy ones included)."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "trl_r1"

# Lowest first; a module may import its own layer and the ones below. The root package (`trl_r1/__init__.py`)
# loads its re-exports lazily, so `from trl_r1 import __version__` costs nothing and is allowed everywhere.
LAYERS = [
    {"registry", "workers", "config"},
    {"verifiers"},
    {"completion"},
    {"rewards", "algorithms"},
    {"trainers", "data", "rehearsal"},  # rehearsal reads TRL's template copies through trainers/trl_compat
    {"toy"},
    {"pipeline"},
    {"cli"},
]
RANK = {part: rank for rank, layer in enumerate(LAYERS) for part in layer}
NO_TRL = {"verifiers", "algorithms", "completion", "rewards", "registry", "workers", "config"}  # pure layers
KNOWN_CYCLES: list[set[str]] = []  # none: issue 34 broke the recipe <-> stages one (the registry lives in recipe.py)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


def imports(name: str) -> set[str]:
    """The modules (of this package, or third-party top-level names) that `name` imports anywhere in its body."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                prefix = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(prefix + ([node.module] if node.module else []))
            for alias in node.names:  # `from . import x` imports the module x when there is one
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base)
    return found


def layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == "trl_r1" and len(parts) > 1 else None


def test_every_subpackage_and_top_level_module_has_a_layer():
    assert {layer(m) for m in MODULES} - {None} == set(RANK)


def test_no_layer_imports_upward():
    upward = sorted(f"{m} -> {t}" for m in MODULES for t in imports(m)
                    if layer(m) and layer(t) and RANK[layer(t)] > RANK[layer(m)])
    assert upward == []


def test_the_pure_layers_import_no_trl():
    offenders = sorted(f"{m} -> {t}" for m in MODULES for t in imports(m)
                       if layer(m) in NO_TRL and t.split(".")[0] == "trl")
    assert offenders == []


def test_no_module_imports_itself_in_a_circle():
    graph = {m: {t for t in imports(m) if t in MODULES and t != m and not m.startswith(t + ".")} for m in MODULES}
    cycles, index, low, stack, counter = [], {}, {}, [], [0]

    def visit(v):  # Tarjan's strongly connected components
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(component)

    for module in MODULES:
        if module not in index:
            visit(module)
    assert [c for c in cycles if c not in KNOWN_CYCLES] == []
    assert all(c in cycles for c in KNOWN_CYCLES)  # when one is broken, drop it from the list
