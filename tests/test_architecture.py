"""The package's import structure: no circles and no private names across modules.

Both rules are read from the source with ``ast``, every import included: top-level ones,
those inside functions and methods, and ``from . import x`` forms.  The layers and what
each may import are described in ``docs/contributing.md``.

* **No import circle.**  The graph has one node per module of ``replica`` and
  ``validation``; an edge ``a -> b`` for each import of ``b`` (or of a name from ``b``)
  in ``a``.  Importing a package means importing its ``__init__``.  The only lazy edges
  that are allowed are those of :data:`LAZY_LOADERS`: modules that load others by name
  at run time (``importlib.import_module``) and are not imports in the source.
* **No private names across modules.**  ``from m import _x`` is refused for every
  underscore name ``_x`` unless ``m`` is one of :data:`KERNEL_MODULES`, the numba kernel
  modules whose names are private to the package by convention.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("replica", "validation")

# numba kernel modules: their underscore names may be imported by the modules they serve
KERNEL_MODULES = frozenset({
    "validation.solvers.engine._optimal_kernels",
    "validation.solvers.engine._maxmargin_kernels",
    "validation._rng",
    "replica._saddle_kernels",
})


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def package_modules(root: Path = ROOT) -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for path in sorted((root / pkg).rglob("*.py")):
            out[module_name(path.resolve()) if root == ROOT else ".".join(
                path.relative_to(root).with_suffix("").parts).removesuffix(".__init__")] = path
    return out


def _resolve(current: str, is_package: bool, level: int, module: str | None) -> str:
    if level == 0:
        return module or ""
    base = current.split(".")
    if not is_package:
        base = base[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def imports_of(name: str, path: Path, modules) -> list[tuple[str, list[str], int]]:
    """(target module, imported names, line) for each import statement in a module."""
    tree = ast.parse(path.read_text(), filename=str(path))
    is_package = path.name == "__init__.py"
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                out.append((alias.name, [], node.lineno))
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(name, is_package, node.level, node.module)
            names = [a.name for a in node.names]
            # "from pkg import mod" imports the submodule pkg.mod
            subs = [n for n in names if f"{target}.{n}" in modules]
            for n in subs:
                out.append((f"{target}.{n}", [], node.lineno))
            rest = [n for n in names if n not in subs]
            if rest or not subs:
                out.append((target, rest, node.lineno))
    return out


def _owner(target: str, modules) -> str | None:
    """The project module an import refers to (the longest known prefix), if any."""
    parts = target.split(".")
    while parts:
        cand = ".".join(parts)
        if cand in modules:
            return cand
        parts.pop()
    return None


def import_graph(modules) -> dict[str, set[str]]:
    graph = {m: set() for m in modules}
    for name, path in modules.items():
        for target, _names, _line in imports_of(name, path, modules):
            owner = _owner(target, modules)
            if owner and owner != name:
                graph[name].add(owner)
                # importing a.b.c runs a/__init__ and a/b/__init__ first
                parts = owner.split(".")
                for k in range(1, len(parts)):
                    parent = ".".join(parts[:k])
                    if parent in modules and parent != name and not name.startswith(parent + "."):
                        graph[name].add(parent)
    return graph


def find_cycles(graph) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    import sys
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10000))
    try:
        for v in sorted(graph):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return out


def private_imports(modules) -> list[str]:
    bad = []
    for name, path in modules.items():
        for target, names, line in imports_of(name, path, modules):
            owner = _owner(target, modules)
            if owner is None or owner == name or owner in KERNEL_MODULES:
                continue
            for n in names:
                if n.startswith("_") and not n.startswith("__"):
                    bad.append(f"{path.relative_to(ROOT)}:{line}: from {owner} import {n}")
    return bad


MODULES = package_modules()


def test_the_graph_sees_the_package():
    # a parser that found no module or no import would pass every rule below
    assert "validation.solvers.optimal" in MODULES and "replica.saddle" in MODULES
    graph = import_graph(MODULES)
    assert "replica.common.checks" in graph["validation.solvers"]


def test_no_import_circle():
    cycles = find_cycles(import_graph(MODULES))
    assert not cycles, "import circles (function-level imports included):\n" + "\n".join(
        " <-> ".join(c) for c in cycles)


def test_no_private_name_crosses_a_module_boundary():
    bad = private_imports(MODULES)
    assert not bad, "underscore names imported from another module:\n" + "\n".join(bad)


@pytest.mark.parametrize("code, expect", [
    ({"pkg/__init__.py": "", "pkg/a.py": "def f():\n    from pkg import b\n",
      "pkg/b.py": "from .a import f\n"}, [["pkg.a", "pkg.b"]]),
    ({"pkg/__init__.py": "", "pkg/a.py": "from pkg.b import g\n", "pkg/b.py": "g = 1\n"}, []),
])
def test_the_circle_finder_can_fail(tmp_path, code, expect):
    # a circle closed by a function-level import is found; a one-way import is not a circle
    for rel, text in code.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    mods = {".".join(p.relative_to(tmp_path).with_suffix("").parts).removesuffix(".__init__"): p
            for p in sorted(tmp_path.rglob("*.py"))}
    assert find_cycles(import_graph(mods)) == expect


# The layers of docs/contributing.md, bottom to top: a module may import from its own layer
# and from layers below it only. The most specific prefix decides a module's layer.
LAYERS = {
    "replica.common": 0,
    "replica": 1, "replica.rectangular": 1, "replica.covariance": 1,
    "validation": 2, "validation._rng": 2, "validation.ensembles": 2, "validation.recall": 2,
    "validation.spectra_and_scores": 2, "validation.intervals": 2, "validation.store": 2,
    "validation.solvers.engine": 3,
    "validation.solvers": 4,
    "validation.sweep": 5, "validation.executors": 5, "validation.capacity": 5, "validation.accuracy": 5,
    "validation.accuracy_bound": 5,
    "validation.top_k_bound": 5,
    "validation.zipf": 5,
    "validation.ce_protocol": 5,
    "validation.figures": 5,
    "validation.reproduce": 6,
    "replica.cli": 7, "replica.__main__": 7, "validation.cli": 7, "validation.__main__": 7,
}


def layer_of(module: str) -> int:
    parts = module.split(".")
    while parts:
        key = ".".join(parts)
        if key in LAYERS:
            return LAYERS[key]
        parts.pop()
    raise KeyError(f"{module} has no layer: add it to LAYERS (and to docs/contributing.md)")


def upward_imports(graph) -> list[str]:
    bad = []
    for module, targets in graph.items():
        for target in targets:
            # a package's parent __init__ runs first on any import of its children: the
            # replica and validation roots are lazy front ends, not layers of their own
            if target in ("replica", "validation"):
                continue
            if layer_of(target) > layer_of(module):
                bad.append(f"{module} (layer {layer_of(module)}) imports {target} (layer {layer_of(target)})")
    return sorted(bad)


def test_every_module_has_a_layer():
    for module in MODULES:
        layer_of(module)


def test_imports_go_down_the_layers():
    bad = upward_imports(import_graph(MODULES))
    assert not bad, "imports that go up a layer (docs/contributing.md):\n" + "\n".join(bad)


def test_the_layer_check_can_fail():
    # a theory module importing the solver front end is an upward import
    assert upward_imports({"replica.finite_size": {"validation.solvers"}}) == [
        "replica.finite_size (layer 1) imports validation.solvers (layer 4)"]
