"""Old module paths of ``validation`` keep working for one release (``validation._MOVED``).

An old path imports the module at its new path with a ``DeprecationWarning``; both names
are one module object, so the module runs once (its numba kernels and module-level state
exist once).  Nothing inside the package imports an old path.
"""

from __future__ import annotations

import ast
import importlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import validation

MOVED = sorted(validation._MOVED.items())
PACKAGE = Path(validation.__file__).resolve().parent


def _forget(old: str) -> None:
    """Drop an old path from ``sys.modules`` and from its parent, so that it is imported again."""
    sys.modules.pop(old, None)
    parent, _, child = old.rpartition(".")
    if parent in sys.modules:
        vars(sys.modules[parent]).pop(child, None)


@pytest.mark.parametrize("old, new", MOVED)
def test_an_old_path_imports_the_module_at_its_new_path(old, new):
    _forget(old)
    with pytest.warns(DeprecationWarning, match=f"module {old} is deprecated: it moved to {new}"):
        module = importlib.import_module(old)
    assert module is importlib.import_module(new) is sys.modules[old] is sys.modules[new]
    # the module keeps its own name and spec (the import system would write the old path's)
    assert module.__name__ == new and module.__spec__.name == new
    assert module.__spec__.origin == module.__file__ and Path(module.__file__).exists()
    _forget(old)


def test_from_an_old_path_import_a_name():
    _forget("validation.instance")
    with pytest.warns(DeprecationWarning, match="validation.instance is deprecated"):
        from validation.instance import Instance
    assert Instance is validation.Instance
    assert Instance.__module__ == "validation.instances.instance"
    _forget("validation.instance")


def test_import_an_old_path_and_read_it_as_an_attribute():
    _forget("validation.recall")
    with pytest.warns(DeprecationWarning, match="validation.recall is deprecated"):
        import validation.recall
    from validation.measurements import recall

    assert validation.recall is recall
    assert validation.recall.recall_check is recall.recall_check
    _forget("validation.recall")


@pytest.mark.parametrize("old", sorted(name for name, _ in MOVED if name.count(".") == 1
                                        and name.split(".")[1] not in validation._LAZY))
def test_an_old_submodule_is_an_attribute_of_validation(old):
    # validation.sweep, validation.recall, ... without importing them first (validation.accuracy_bound
    # is the function of __all__: below)
    name = old.split(".")[1]
    _forget(old)
    with pytest.warns(DeprecationWarning, match=f"{old} is deprecated"):
        module = getattr(validation, name)
    assert module is importlib.import_module(validation._MOVED[old])


def test_the_old_path_of_the_accuracy_bound_does_not_shadow_the_function():
    # validation.accuracy_bound is the function of __all__; its old module path still imports
    _forget("validation.accuracy_bound")
    with pytest.warns(DeprecationWarning, match="validation.accuracy_bound is deprecated"):
        from validation.accuracy_bound import AccuracyBound, accuracy_bound
    from validation.bounds import accuracy

    assert validation.accuracy_bound is accuracy_bound is accuracy.accuracy_bound and callable(accuracy_bound)
    assert AccuracyBound is validation.AccuracyBound
    _forget("validation.accuracy_bound")


def test_every_public_name_resolves_to_its_module():
    for name, module in validation._LAZY.items():
        assert getattr(validation, name) is getattr(importlib.import_module(module), name), name
    assert validation.__all__ == sorted(validation._LAZY)
    with pytest.raises(AttributeError, match="no_such_name"):
        validation.no_such_name  # noqa: B018


def test_the_console_scripts_load():
    import tomllib
    from importlib.metadata import EntryPoint

    pyproject = PACKAGE.parent / "pyproject.toml"
    if not pyproject.exists():  # an installed wheel: read the scripts it installed
        from importlib.metadata import entry_points

        scripts = {ep.name: ep for ep in entry_points(group="console_scripts") if ep.name in ("replica", "validation")}
    else:
        table = tomllib.loads(pyproject.read_text())["project"]["scripts"]
        scripts = {name: EntryPoint(name, value, "console_scripts") for name, value in table.items()}
    assert set(scripts) == {"replica", "validation"}
    for entry in scripts.values():
        assert callable(entry.load())


_FRESH = textwrap.dedent("""
    import sys, warnings
    import numpy as np
    warnings.simplefilter("error", DeprecationWarning)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        import validation.recall as old
        import validation._rng as old_candidates
    assert [str(w.message).split(":")[0] for w in caught] == [
        "module validation.recall is deprecated", "module validation._rng is deprecated"], caught
    import validation.measurements.recall as new
    from validation.instances import _candidate_kernels as candidates
    assert old is new and old_candidates is candidates
    assert new._recall_kernel is old._recall_kernel and candidates.dp_pairs is old_candidates.dp_pairs
    # one module object: the new path ran once, under its own name
    assert new.__spec__.name == "validation.measurements.recall", new.__spec__
    assert [m for m in sys.modules.values() if getattr(m, "__file__", None) == new.__file__] == [new] * 2
    # the cached kernels work from their new place
    scores = np.array([[2.0, 0.0], [1.0, 3.0]])
    recalled, margins = new.recall_check(scores)
    assert recalled.all() and np.allclose(margins, [1.0, 3.0])
    print(new._recall_kernel.stats.cache_path)
    pairs = candidates.dp_pairs(np.uint64(3), candidates.candidate_code("gaussian", 2), np.arange(2), np.arange(2), 4)
    assert pairs.shape == (2, 4)
    print(candidates.dp_fill_pairs.stats.cache_path)
""")


def test_an_old_path_first_then_the_new_one_in_a_fresh_interpreter(tmp_path):
    # no other import has loaded the module before: the old path runs it, the new path finds it
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", _FRESH], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    recall_cache, candidates_cache = out.stdout.split()
    assert "measurements" in recall_cache and "instances" in candidates_cache
    assert any(Path(tmp_path).rglob("recall._recall_kernel-*.nbi"))


def _old_paths_imported(path: Path, module: str, root: Path = PACKAGE.parent) -> list[str]:
    """``file:line: old path`` of each old path (a key of ``_MOVED``) a module imports."""
    tree = ast.parse(path.read_text(), filename=str(path))
    base = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            head = base[: len(base) - node.level + 1] if node.level else []
            target = ".".join(head + ([node.module] if node.module else []))
            # from validation import recall (a submodule), not a public name such as accuracy_bound
            targets = [target] + [f"{target}.{alias.name}" for alias in node.names
                                  if not (target == "validation" and alias.name in validation._LAZY)]
        else:
            continue
        found += [f"{path.relative_to(root)}:{node.lineno}: {t}" for t in targets
                  if t in validation._MOVED]
    return found


def _package_files(subpackage: str) -> list[tuple[Path, str]]:
    root = PACKAGE / subpackage if subpackage else PACKAGE
    files = sorted(root.rglob("*.py")) if subpackage else sorted(root.glob("*.py"))
    return [(f, ".".join(f.relative_to(PACKAGE.parent).with_suffix("").parts)) for f in files]


_SUBPACKAGES = sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists())


@pytest.mark.parametrize("subpackage", [""] + _SUBPACKAGES)
def test_the_package_imports_no_old_path(subpackage):
    bad = [hit for path, module in _package_files(subpackage) for hit in _old_paths_imported(path, module)]
    assert not bad, "imports of old module paths (use the new ones):\n" + "\n".join(bad)


def test_the_old_path_finder_can_fail(tmp_path):
    text = ("from ..sweep import Task\nfrom validation import recall\nimport validation.store\nfrom . import x\n"
            "from validation import accuracy_bound\nfrom ..runtime.sweep import run_tasks\n")
    (tmp_path / "mod.py").write_text(text)
    hits = _old_paths_imported(tmp_path / "mod.py", "validation.capacity.mod", root=tmp_path)
    assert [h.split(": ", 1)[1] for h in hits] == ["validation.sweep", "validation.recall", "validation.store"]
