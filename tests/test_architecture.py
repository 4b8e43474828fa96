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
* **Imports go down the layers** of :data:`LAYERS`.
* **One registry.**  No module of ``validation`` outside :data:`REGISTRY_MODULES` compares
  a solver or memory name with a string literal.
* **Experiments use the public API**: no file under ``experiments/`` imports or reads a
  private name (``_x``) of ``replica`` or ``validation``.
* **Sizes**: files of at most 600 lines, functions of at most 80 lines of code and 8
  parameters (numba kernels exempt; :data:`SIZE_EXEMPT` names the exceptions and why).

Each rule has a test that shows it failing on a small tree written to ``tmp_path``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("replica", "validation")

# numba kernel modules: their underscore names may be imported by the modules they serve
KERNEL_MODULES = frozenset({
    "validation.solvers.engine._optimal_kernels",
    "validation.solvers.engine._maxmargin_kernels",
    "validation.instances._candidate_kernels",
    "replica.saddle._kernels",
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
    assert "validation.solvers.optimal" in MODULES and "replica.saddle.point" in MODULES
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
    # the theory's subpackages are sub-layers of layer 1: the asymptotic laws, then the
    # optimal and Hebbian memories, then the saddle point and the variants built on them
    "replica": 1, "replica.asymptotic": 1.0, "replica.optimal": 1.1, "replica.hebbian": 1.1,
    "replica.saddle": 1.2, "replica.variants": 1.2,
    # the front ends, one per quantity, over every model of the theory
    "replica.quantities": 1.3,
    # validation: instances and the measurements of one memory at the bottom (the solvers use
    # them), then the solver engine, the solvers, and what is built on them
    "validation": 2, "validation.instances": 2, "validation.measurements": 2,
    "validation.solvers.engine": 3,
    "validation.solvers": 4,
    "validation.measurements.accuracy": 5, "validation.measurements.zipf": 5,
    "validation.measurements.zipf_memories": 5, "validation.measurements.ce_protocol": 5,
    "validation.bounds": 5, "validation.runtime": 5, "validation.capacity": 5,
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
    assert upward_imports({"replica.optimal.finite_size": {"validation.solvers"}}) == [
        "replica.optimal.finite_size (layer 1.1) imports validation.solvers (layer 4)"]
    # and so is an optimal-memory module importing a variant built on it
    assert upward_imports({"replica.optimal.cost": {"replica.variants.zipf"}}) == [
        "replica.optimal.cost (layer 1.1) imports replica.variants.zipf (layer 1.2)"]



def _where(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


# ----------------------------------------------------------------------------------
# One registry: no module outside it compares a solver or memory name with a literal
# ----------------------------------------------------------------------------------

# the modules that may name solvers and memories: the registry
REGISTRY_MODULES = frozenset({"validation.solvers.engine.registry"})
# an operand holds a solver or memory name when it is called like one: solver, solvers,
# memory, memories, name, or ending in _solver, _memory, _name (optimal_solver, spec.name),
# or is a mapping entry read under such a key (row["solver"])
_NAME_HOLDER = re.compile(r"(^|_)(solvers?|memory|memories|name)$")


def registered_names() -> frozenset:
    """The registered solver and memory names (a compared literal must be one to count)."""
    from validation.solvers.engine.registry import memory_names, solver_names

    return frozenset(solver_names()) | frozenset(memory_names())


def _holder(node) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
        return node.slice.value
    return None


def _literals(node) -> set:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and node.elts and all(
            isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
        return {e.value for e in node.elts}
    return set()


def name_comparisons(modules, names) -> list[str]:
    """``path:line: code`` of each comparison of a name holder with a literal that is a registered name.

    A comparison (``==``, ``!=``, ``in``, ``not in``, ...) counts when one operand is a name
    holder (:data:`_NAME_HOLDER`) and another a string literal, or a tuple, list or set of
    them, holding a registered solver or memory name (so ``name == "seed"`` does not count).
    """
    bad = []
    for module, path in modules.items():
        if module in REGISTRY_MODULES:
            continue
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Compare):
                continue
            operands = [node.left, *node.comparators]
            holders = [h for h in map(_holder, operands) if h and _NAME_HOLDER.search(h)]
            literals = set().union(*map(_literals, operands))
            if holders and literals & names:
                bad.append(f"{_where(path)}:{node.lineno}: {ast.unparse(node)}")
    return sorted(bad)


def test_no_module_outside_the_registry_compares_solver_names():
    # the theory package has no solver registry: its memory argument names a theory, not a solver
    validation_modules = {m: p for m, p in MODULES.items() if m.split(".")[0] == "validation"}
    bad = name_comparisons(validation_modules, registered_names())
    assert not bad, ("solver or memory names compared with a literal outside the registry "
                     "(ask validation.solvers.engine.registry: solver_spec(name), memory_spec(name)):\n"
                     + "\n".join(bad))


def _write(root: Path, files: dict) -> dict:
    """Write ``files`` (relative path -> text) under ``root``; their module names -> paths."""
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return {".".join(p.relative_to(root).with_suffix("").parts).removesuffix(".__init__"): p
            for p in sorted(root.rglob("*.py"))}


def test_the_name_comparison_rule_can_fail(tmp_path):
    names = frozenset({"optimal", "hebbian", "adam_frequency"})
    mods = _write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/bad.py": ("def f(solver, row, spec, config):\n"
                       "    a = solver == 'optimal'\n"
                       "    b = row['solver'] in ('hebbian', 'lp')\n"
                       "    c = 'adam_frequency' != spec.name\n"
                       "    return config.optimal_solver == 'hebbian'\n"),
        "pkg/good.py": ("def g(name, solver, spec, status):\n"
                        "    a = name == 'seed'\n"            # not a registered name
                        "    b = solver == spec.name\n"       # no literal
                        "    c = status == 'optimal'\n"       # not a name holder
                        "    return solver == other_solver()\n"),
        "pkg/solvers/engine/registry.py": "def h(solver):\n    return solver == 'optimal'\n",
    })
    mods = {m.replace("pkg.solvers.engine.registry", "validation.solvers.engine.registry"): p for m, p in mods.items()}
    bad = name_comparisons(mods, names)
    assert [b.split(": ", 1)[1] for b in bad] == [
        "solver == 'optimal'", "row['solver'] in ('hebbian', 'lp')", "'adam_frequency' != spec.name",
        "config.optimal_solver == 'hebbian'"]
    assert all("bad.py" in b for b in bad)


# ----------------------------------------------------------------------------------
# Experiments use the public API only: no private name of replica or validation
# ----------------------------------------------------------------------------------

EXPERIMENTS = ROOT / "experiments"


def _private(parts) -> str | None:
    """The first private part (``_x``, not a dunder) of a dotted name, if any."""
    return next((p for p in parts if p.startswith("_") and not (p.startswith("__") and p.endswith("__"))), None)


def private_uses(files, packages=PACKAGES) -> list[str]:
    """``path:line: what`` of each use of a private name of ``packages`` in ``files``.

    Counted: ``import validation.instances._candidate_kernels``, ``from replica._saddle_kernels import x``,
    ``from validation.instances import _candidate_kernels``, ``from validation.measurements.zipf import _errors``
    and attribute reads ``validation.instances._candidate_kernels`` or ``v.solvers._x`` through a name bound to
    a package module.
    """
    bad = []
    for path in files:
        tree = ast.parse(path.read_text(), filename=str(path))
        bound = {}   # local name -> the package module it is bound to
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    parts = alias.name.split(".")
                    if parts[0] not in packages:
                        continue
                    if _private(parts):
                        bad.append(f"{_where(path)}:{node.lineno}: import {alias.name}")
                    bound[alias.asname or parts[0]] = alias.name if alias.asname else parts[0]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                parts = node.module.split(".")
                if parts[0] not in packages:
                    continue
                for alias in node.names:
                    if _private(parts) or _private([alias.name]):
                        bad.append(f"{_where(path)}:{node.lineno}: from {node.module} import {alias.name}")
                    bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
                base = node.value
                while isinstance(base, ast.Attribute):
                    base = base.value
                if isinstance(base, ast.Name) and base.id in bound:
                    bad.append(f"{_where(path)}:{node.lineno}: {ast.unparse(node)}")
    return sorted(set(bad))


def test_experiments_use_no_private_name():
    # the experiments folder may not exist yet: then there is nothing to check
    files = sorted(EXPERIMENTS.rglob("*.py")) if EXPERIMENTS.is_dir() else []
    bad = private_uses(files)
    assert not bad, "experiments use private names of the package (use the public API):\n" + "\n".join(bad)


def test_the_private_name_rule_can_fail(tmp_path):
    files = _write(tmp_path, {
        "experiments/zipf/run.py": ("import validation.instances._candidate_kernels\n"
                                    "import replica as r\n"
                                    "from validation.instances import _candidate_kernels, ensembles\n"
                                    "from validation.measurements.zipf import _errors\n"
                                    "from replica._saddle_kernels import bulk\n"
                                    "x = r._cache\n"),
        "experiments/zipf/ok.py": ("import numpy as np\n"
                                   "import validation\n"
                                   "from replica import capacity\n"
                                   "from validation.cli.__main__ import main\n"
                                   "y = np._NoValue\n"
                                   "z = validation.__version__, capacity.__doc__\n"),
    })
    bad = private_uses(files.values())
    assert [b.split(": ", 1)[1] for b in bad] == [
        "import validation.instances._candidate_kernels", "from validation.instances import _candidate_kernels",
        "from validation.measurements.zipf import _errors", "from replica._saddle_kernels import bulk", "r._cache"]
    assert all("run.py" in b for b in bad)


# ----------------------------------------------------------------------------------
# Sizes: files, functions and parameter lists
# ----------------------------------------------------------------------------------

MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 80     # lines of code: the docstring does not count
MAX_PARAMETERS = 8          # named parameters; *args and **kwargs (deprecated flat keywords) do not count
# functions allowed more, and why
SIZE_EXEMPT = {
    # solve(instance, solver, *, kappa, tol, max_iter, time_limit, seed, refine, options, restarts):
    # every shared argument is a keyword of the one public entry point, and calls such as
    # solve(inst, "adam", max_iter=...) or solve(inst, "optimal", refine=False) are everywhere
    "validation.solvers.solve": "parameters",
    # capacity(d, kappa, margin, top_k, *, outputs, problem, ensemble, rel_tol, tol, max_iter, seed): the
    # front end of the most used prediction names every keyword in its signature (no **accuracy);
    # capacity(d, rel_tol=...) and capacity(d, seed=...) are used by every sweep and command line
    "replica.optimal.finite_size.capacity": "parameters",
    # capacity(d, kappa, margin, top_k, *, d_out, outputs, problem, ensemble, model, options) and
    # accuracy(d, p, kappa, *, memory, problem, ensemble, input_spectrum, output_spectrum, model, options):
    # the front ends of the capacity and the accuracy name every parameter of their quantity (the
    # coordinates of its measured regimes), plus model= and options= (the model's settings, a
    # replica.Tolerances or a dict)
    "replica.quantities.capacity": "parameters",
    "replica.quantities.accuracy": "parameters",
}
_JIT = {"njit", "jit", "vectorize", "guvectorize", "generated_jit", "cfunc", "stencil"}


def _jitted(fn) -> bool:
    """A numba kernel: decorated with ``numba.njit(...)``, ``@njit`` and the like."""
    for dec in fn.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", None)
        if name in _JIT:
            return True
    return False


def _code_lines(fn) -> int:
    body = fn.body
    doc = 0
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        doc = body[0].end_lineno - body[0].lineno + 1
    return fn.end_lineno - fn.lineno + 1 - doc


def _parameters(fn) -> int:
    a = fn.args
    names = [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    return len(names) - (1 if names and names[0] in ("self", "cls") else 0)


def size_violations(modules) -> list[str]:
    bad = []
    for module, path in modules.items():
        text = path.read_text()
        if len(text.splitlines()) > MAX_FILE_LINES:
            bad.append(f"{_where(path)}: {len(text.splitlines())} lines (at most {MAX_FILE_LINES})")
        tree = ast.parse(text, filename=str(path))
        for node in ast.walk(tree):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or _jitted(node):
                continue
            exempt = SIZE_EXEMPT.get(f"{module}.{node.name}")
            if _code_lines(node) > MAX_FUNCTION_LINES and exempt != "lines":
                bad.append(f"{_where(path)}:{node.lineno}: {node.name} has {_code_lines(node)} lines of code "
                           f"(at most {MAX_FUNCTION_LINES})")
            if _parameters(node) > MAX_PARAMETERS and exempt != "parameters":
                bad.append(f"{_where(path)}:{node.lineno}: {node.name} has {_parameters(node)} parameters "
                           f"(at most {MAX_PARAMETERS})")
    return bad


@pytest.mark.parametrize("package", PACKAGES)
def test_files_and_functions_are_small(package):
    bad = size_violations({m: p for m, p in MODULES.items() if m.split(".")[0] == package})
    assert not bad, "too large (split the file, the function or its parameters):\n" + "\n".join(bad)


def test_the_size_rule_can_fail(tmp_path):
    long_body = "".join(f"    x{i} = {i}\n" for i in range(81))
    mods = _write(tmp_path, {
        "pkg/big.py": "x = 1\n" * 601,
        "pkg/fns.py": ("import numba\n"
                       f"def long():\n    \"\"\"Doc.\n\n    More.\n    \"\"\"\n{long_body}"
                       "def wide(a, b, c, d, e, f, g, h, i):\n    pass\n"
                       "def fine(self, a, b, c, d, e, f, g, h, *args, **kwargs):\n    pass\n"
                       "@numba.njit(cache=True)\ndef kernel(a, b, c, d, e, f, g, h, i, j):\n    pass\n"),
    })
    bad = size_violations(mods)
    assert [b.split(": ", 1)[1] for b in bad] == [
        "601 lines (at most 600)", "long has 82 lines of code (at most 80)", "wide has 9 parameters (at most 8)"]


# ----------------------------------------------------------------------------------
# Grouping: few modules at the root of a package, the rest in subpackages by what they are
# ----------------------------------------------------------------------------------

# modules a package may keep at its root, besides __init__.py and __main__.py
MAX_ROOT_MODULES = {"validation": 6}


def root_modules(package: Path) -> list[str]:
    """The modules at the root of ``package`` (``*.py``, not ``__init__``/``__main__``)."""
    return sorted(p.name for p in package.glob("*.py") if p.name not in ("__init__.py", "__main__.py"))


@pytest.mark.parametrize("package, limit", sorted(MAX_ROOT_MODULES.items()))
def test_the_root_of_a_package_holds_few_modules(package, limit):
    modules = root_modules(ROOT / package)
    assert len(modules) <= limit, (f"{package}/ holds {len(modules)} modules at its root (at most {limit}): "
                                   f"{', '.join(modules)}; move them into the subpackage of what they are")


def test_the_root_module_rule_can_fail(tmp_path):
    for name in ("__init__", "__main__", "a", "b", "c"):
        (tmp_path / f"{name}.py").write_text("")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "d.py").write_text("")
    assert root_modules(tmp_path) == ["a.py", "b.py", "c.py"]
