"""The solver choices that docstrings list are the registry's names.

A numpydoc parameter ``solver : {"a", "b"}`` (or ``solvers : sequence of {...}``) names the
choices a function takes; for a solver they must be the registered solvers
(:func:`~validation.solvers.engine.registry.solver_names`), for the memories of the Zipf
error the registered memories (:func:`~validation.solvers.engine.registry.memory_names`).
The package docstring's list of solvers is checked too.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from validation.solvers.engine.registry import memory_names, solver_names

ROOT = Path(__file__).resolve().parents[2]
_CHOICES = re.compile(r"^\s*(solver|solvers)\s*:\s*(?:sequence of\s*)?\{([^}]*)\}", re.M)


def listed_choices(root: Path = ROOT / "validation", base: Path = ROOT) -> list[tuple[str, str, frozenset]]:
    """``(where, parameter, choices)`` for every solver choice list in the docstrings under ``root``."""
    out = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in [tree, *ast.walk(tree)]:
            if not isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            doc = ast.get_docstring(node) or ""
            for match in _CHOICES.finditer(doc):
                choices = frozenset(re.findall(r'"([^"]+)"', match.group(2)))
                where = f"{path.relative_to(base)}:{getattr(node, 'name', '<module>')}"
                out.append((where, match.group(1), choices))
    return out


def expected(parameter: str) -> frozenset:
    return frozenset(memory_names() if parameter == "solvers" else solver_names())


def test_the_parser_finds_the_lists():
    found = {where for where, _, _ in listed_choices()}
    assert "validation/solvers/__init__.py:solve" in found and "validation/measurements/zipf.py:measure_zipf" in found


# ids in sorted order: a set's repr depends on the hash seed, and every xdist worker must collect the same ids
@pytest.mark.parametrize("where, parameter, choices", listed_choices(),
                         ids=lambda x: ",".join(sorted(x)) if isinstance(x, frozenset) else str(x))
def test_docstring_choices_are_the_registry(where, parameter, choices):
    assert choices == expected(parameter), (
        f"{where}: {parameter} lists {sorted(choices)}, the registry has {sorted(expected(parameter))}")


def test_the_package_docstring_lists_the_registered_solvers():
    import validation

    line = re.search(r"runs one of the solvers \(([^)]*)\)", validation.__doc__).group(1)
    assert frozenset(re.findall(r"``(\w+)``", line)) == frozenset(solver_names())


def test_the_solvers_front_end_has_one_bullet_per_solver():
    import validation.solvers as front

    assert frozenset(re.findall(r"^\* ``(\w+)`` --", front.__doc__, re.M)) == frozenset(solver_names())


def test_a_wrong_list_is_found(tmp_path):
    (tmp_path / "m.py").write_text('def f(solver):\n    """F.\n\n    Parameters\n    ----------\n'
                                   '    solver : {"optimal", "hebbian"}\n    """\n')
    [(where, parameter, choices)] = listed_choices(tmp_path, tmp_path)
    assert (where, parameter) == ("m.py:f", "solver") and choices != expected("solver")
