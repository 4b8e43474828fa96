"""Check that a wheel ships every data file the code of ``replica`` and ``validation`` reads beside itself.

Usage::

    python tools/check_wheel.py                 # build a wheel from the tracked files, then check it
    python tools/check_wheel.py dist/X.whl      # check a wheel built already

A module reads a data file beside itself through ``Path(__file__)`` (``.parent``,
``.parents[n]``, ``/``, ``joinpath``), ``os.path`` (``dirname``, ``join``) or
``importlib.resources.files(...)``.  :func:`referenced_data_files` finds those paths in
the source with ``ast`` (a name bound to a string or to such a path is followed, and a
``glob`` pattern counts as the files it matches), keeps the ones whose name ends in a
data suffix (:data:`DATA_SUFFIXES`) and gives each as a path relative to the source root
(``replica/variants/few_outputs_table.json``).  :func:`shipped` says whether the
``[tool.setuptools.package-data]`` table of ``pyproject.toml`` puts a file in the wheel,
with setuptools' rules: each key is a package (``""`` or ``"*"``: every package), each
pattern a glob relative to that package's folder, ``**`` spanning folders.

The check of a wheel fails, naming the file, when a referenced data file is not inside
it, and also when the wheel holds tests, ``__pycache__`` folders or compiled files.
Exit status: 0 when the wheel passes, 1 when it does not, 2 when no wheel could be built.
``tests/test_package_data.py`` checks the source tree and the configuration the same way
on every run.
"""

from __future__ import annotations

import argparse
import ast
import copy
import fnmatch
import functools
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path, PurePosixPath

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("replica", "validation")
DATA_SUFFIXES = (".json", ".npz", ".npy", ".csv", ".txt", ".toml", ".pkl")
"""File names ending so are data files when the code reads them beside itself."""
_GLOB_CHARS = re.compile(r"[*?\[]")


# ---------------------------------------------------------------------------------
# The data files the code reads beside itself
# ---------------------------------------------------------------------------------
class _Here:
    """A path known relative to the source root (a folder or a file, or a glob pattern)."""

    def __init__(self, path: PurePosixPath):
        self.path = path


def _dotted(func) -> str:
    """``files``, ``resources.files``, ``os.path.join``: the dotted name of a call's function ("" if none)."""
    parts = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if isinstance(func, ast.Name):
        parts.append(func.id)
    return ".".join(reversed(parts))


class _Evaluator:
    """Evaluates the path expressions of one module to :class:`_Here` values (None when unknown)."""

    def __init__(self, module_path: PurePosixPath):
        self.module = module_path
        self.package = module_path.parent
        self.names: dict = {}
        self.local: set = set()

    def value(self, node):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.Name):
            if node.id == "__file__":
                return _Here(self.module)
            if node.id == "__package__":
                return ".".join(self.package.parts)
            if node.id == "__name__":
                parts = self.module.with_suffix("").parts
                return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            return self.names.get(node.id)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            return self._join(self.value(node.left), [self.value(node.right)])
        if isinstance(node, ast.Attribute) and node.attr == "parent":
            base = self.value(node.value)
            return _Here(base.path.parent) if isinstance(base, _Here) else None
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) \
                and node.value.attr == "parents" and isinstance(node.slice, ast.Constant):
            base, index = self.value(node.value.value), node.slice.value
            if isinstance(base, _Here) and isinstance(index, int) and 0 <= index < len(base.path.parents):
                return _Here(base.path.parents[index])
            return None
        if isinstance(node, ast.Call):
            return self._call(node)
        return None

    def _join(self, base, parts):
        if not isinstance(base, _Here) or not parts or not all(isinstance(p, str) for p in parts):
            return None
        return _Here(base.path.joinpath(*parts))

    def _call(self, node: ast.Call):
        name = _dotted(node.func)
        args = node.args
        last = name.rsplit(".", 1)[-1]
        if last in ("Path", "PurePath", "PosixPath", "abspath", "realpath", "normpath", "fspath", "str") \
                and len(args) == 1:
            return self.value(args[0])
        if last == "dirname" and len(args) == 1:
            base = self.value(args[0])
            return _Here(base.path.parent) if isinstance(base, _Here) else None
        if name.endswith("path.join") and args:
            return self._join(self.value(args[0]), [self.value(a) for a in args[1:]])
        if last == "files" and len(args) == 1 and (name == "files" or "resources" in name):
            target = self.value(args[0])
            if isinstance(target, str):
                directory = PurePosixPath(*target.split("."))
                if directory.parts[0] != self.module.parts[0]:
                    return None   # another distribution's resources
                if directory.with_suffix(".py") == self.module:
                    return _Here(directory.parent)   # files(__name__) of a plain module: its package
                return _Here(directory)
            return None
        if isinstance(node.func, ast.Attribute):
            base = self.value(node.func.value)
            if not isinstance(base, _Here):
                return None
            method = node.func.attr
            if method in ("resolve", "absolute", "expanduser") and not args:
                return base
            if method == "joinpath":
                return self._join(base, [self.value(a) for a in args])
            if method in ("glob", "rglob") and len(args) == 1 and isinstance(self.value(args[0]), str):
                pattern = self.value(args[0])
                return _Here(base.path / ("**/" + pattern if method == "rglob" else pattern))
            if method == "with_name" and len(args) == 1 and isinstance(self.value(args[0]), str):
                return _Here(base.path.with_name(self.value(args[0])))
        return None


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def _own_nodes(scope) -> list:
    """The nodes of a scope in source order, without the bodies of the functions defined in it."""
    out, stack = [], list(ast.iter_child_nodes(scope))
    while stack:
        node = stack.pop()
        out.append(node)
        if not isinstance(node, _SCOPES):
            stack.extend(ast.iter_child_nodes(node))
    return sorted(out, key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0)))


def _bind(evaluator: _Evaluator, nodes) -> None:
    """Names of the scope bound to a string or a known path (the first binding in the scope)."""
    for node in nodes:
        targets, value = [], None
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        for target in targets:
            if isinstance(target, ast.Name) and target.id not in evaluator.local:
                found = evaluator.value(value)
                if found is not None:
                    evaluator.names[target.id] = found
                    evaluator.local.add(target.id)


def _guarded(evaluator: _Evaluator, node):
    """The path whose existence a call tests (``p.exists()``, ``p.is_file()``, ``os.path.exists(p)``), or None."""
    if not isinstance(node, ast.Call):
        return None
    if isinstance(node.func, ast.Attribute) and node.func.attr in ("exists", "is_file") and not node.args:
        value = evaluator.value(node.func.value)
    elif _dotted(node.func).endswith(("path.exists", "path.isfile")) and len(node.args) == 1:
        value = evaluator.value(node.args[0])
    else:
        return None
    return value if isinstance(value, _Here) else None


def _scan(scope, evaluator: _Evaluator, outer: dict, found: dict, guarded: set) -> None:
    """Record the data paths of ``scope`` and of the functions in it (each with its own names)."""
    names = dict(outer)
    if isinstance(scope, _SCOPES):   # a parameter hides the outer name
        for arg in ast.walk(scope.args):
            if isinstance(arg, ast.arg):
                names.pop(arg.arg, None)
    evaluator.names, evaluator.local = names, set()
    nodes = _own_nodes(scope)
    _bind(evaluator, nodes)
    for node in nodes:
        if isinstance(node, ast.expr):
            value = evaluator.value(node)
            if isinstance(value, _Here) and _is_data(value.path):
                found.setdefault(_normal(value.path), set()).add(node.lineno)
            tested = _guarded(evaluator, node)
            if tested is not None:
                guarded.add(_normal(tested.path))
    mine = dict(evaluator.names)
    for node in nodes:
        if isinstance(node, _SCOPES):
            _scan(node, evaluator, mine, found, guarded)


def _normal(path: PurePosixPath) -> str:
    return os.path.normpath(str(path)).replace(os.sep, "/")


def _is_data(path: PurePosixPath) -> bool:
    return path.name.lower().endswith(DATA_SUFFIXES)


def module_data_files(source: str, module_path) -> dict[str, dict]:
    """``{path relative to the source root: {"lines": [...], "optional": bool}}`` of one module.

    The data files the module (``module_path``, relative to the source root, e.g.
    ``replica/x/y.py``) reads beside itself, with the lines that name them.  A file is
    ``optional`` when the module tests that it exists (``.exists()``, ``.is_file()``,
    ``os.path.exists``) before reading it: such a file must ship when it is there but may
    be absent.  Paths that leave the source root keep their ``..`` parts, so that a module
    reading a file outside its packages is reported too.
    """
    tree = ast.parse(source)
    found: dict = {}
    guarded: set = set()
    _scan(tree, _Evaluator(PurePosixPath(module_path)), {}, found, guarded)
    return {name: {"lines": sorted(lines), "optional": name in guarded} for name, lines in sorted(found.items())}


def referenced_data_files(root: Path = ROOT, packages=PACKAGES) -> dict[str, dict]:
    """``{path relative to root: {"where": ["module.py:line", ...], "optional": bool}}`` for the packages.

    Every data file the code of ``packages`` reads beside itself (:func:`module_data_files`).
    """
    return copy.deepcopy(_referenced(Path(root), tuple(packages)))


@functools.lru_cache(maxsize=4)
def _referenced(root: Path, packages: tuple) -> dict:
    out: dict = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            rel = path.relative_to(root).as_posix()
            for name, ref in module_data_files(path.read_text(encoding="utf-8"), rel).items():
                entry = out.setdefault(name, {"where": [], "optional": True})
                entry["where"] += [f"{rel}:{line}" for line in ref["lines"]]
                entry["optional"] = entry["optional"] and ref["optional"]
    return dict(sorted(out.items()))


def expand(name: str, root: Path = ROOT) -> list[str]:
    """The files of the tree that ``name`` (a path or a glob pattern relative to root) stands for."""
    if not _GLOB_CHARS.search(name):
        return [name] if (root / name).is_file() else []
    return sorted(Path(p).relative_to(root).as_posix() for p in glob.glob(str(root / name), recursive=True)
                  if Path(p).is_file())


# ---------------------------------------------------------------------------------
# What the package-data configuration ships
# ---------------------------------------------------------------------------------
def package_data(pyproject: Path = ROOT / "pyproject.toml") -> dict[str, list[str]]:
    """``[tool.setuptools.package-data]`` of ``pyproject``: ``{package: [patterns]}``."""
    with open(pyproject, "rb") as fh:
        config = tomllib.load(fh)
    return dict(config.get("tool", {}).get("setuptools", {}).get("package-data", {}))


def _segments_match(parts, pattern) -> bool:
    """Glob match of path parts against pattern parts, ``**`` standing for any number of folders."""
    if not pattern:
        return not parts
    if pattern[0] == "**":
        return any(_segments_match(parts[i:], pattern[1:]) for i in range(len(parts) + 1))
    return bool(parts) and fnmatch.fnmatchcase(parts[0], pattern[0]) and not (
        parts[0].startswith(".") and not pattern[0].startswith(".")) and _segments_match(parts[1:], pattern[1:])


def matches(relative: str, pattern: str) -> bool:
    """Whether ``relative`` (a path inside a package folder) is matched by a package-data ``pattern``."""
    return _segments_match(PurePosixPath(relative).parts, PurePosixPath(pattern).parts)


def packages_of(path: str, root: Path = ROOT) -> list[str]:
    """The packages (dotted) whose folder holds ``path``, innermost first (folders with ``__init__.py``)."""
    parts = PurePosixPath(path).parts[:-1]
    found = []
    for n in range(1, len(parts) + 1):
        if parts[0] in PACKAGES and (root.joinpath(*parts[:n]) / "__init__.py").is_file():
            found.append(".".join(parts[:n]))
    return found[::-1]


def shipped(path: str, config: dict, root: Path = ROOT) -> bool:
    """Whether the package-data ``config`` puts ``path`` (relative to root) in the wheel."""
    for package in packages_of(path, root):
        inside = PurePosixPath(path).relative_to(PurePosixPath(*package.split("."))).as_posix()
        for key in (package, "", "*"):
            if any(matches(inside, pattern) for pattern in config.get(key, ())):
                return True
    return False


def unshipped(config: dict, root: Path = ROOT) -> list[str]:
    """``"path (referenced at module.py:line, ...)"`` of each data file the configuration leaves out."""
    bad = []
    for name, ref in referenced_data_files(root).items():
        for path in expand(name, root) or [name]:
            if not shipped(path, config, root):
                bad.append(f"{path} (referenced at {', '.join(ref['where'])})")
    return bad


def missing(root: Path = ROOT) -> list[str]:
    """``"path (referenced at ...)"`` of each data file the code needs that the source tree lacks.

    Optional files (the code tests that they exist) are not needed.
    """
    return [f"{name} (referenced at {', '.join(ref['where'])})" for name, ref in referenced_data_files(root).items()
            if not ref["optional"] and not expand(name, root)]


# ---------------------------------------------------------------------------------
# The wheel
# ---------------------------------------------------------------------------------
def _tracked_files(root: Path) -> list[str]:
    """The files git tracks, and the new ones it does not ignore (the tree a commit would hold)."""
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], cwd=root,
                         capture_output=True, check=True).stdout.decode()
    return [name for name in out.split("\0") if name and (root / name).is_file()]


def build_wheel(out: Path, root: Path = ROOT) -> Path:
    """Build the wheel (``pip wheel --no-deps``) from a copy of the tracked files, into ``out``."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "src"
        for name in _tracked_files(root):
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(root / name, copy / name)
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(out), str(copy)],
                       check=True)
    wheels = sorted(out.glob("*.whl"))
    if len(wheels) != 1:
        raise RuntimeError(f"expected one wheel in {out}, found {[w.name for w in wheels]}")
    return wheels[0]


def wheel_problems(wheel: Path, root: Path = ROOT) -> list[str]:
    """What is wrong with ``wheel``: data files it lacks; tests, caches or compiled files it holds.

    Every data file the code reads beside itself must be inside it (an optional one when
    it is in the source tree), and none of the needed ones may be missing from the tree.
    """
    with zipfile.ZipFile(wheel) as zf:
        members = set(zf.namelist())
    problems = [f"{text}: not in the source tree" for text in missing(root)]
    for name, ref in referenced_data_files(root).items():
        problems += [f"{path} (referenced at {', '.join(ref['where'])}): not in the wheel"
                     for path in expand(name, root) if path not in members]
    for member in sorted(members):
        parts = PurePosixPath(member).parts
        if parts[0] in ("tests", "test") or "__pycache__" in parts or member.endswith((".pyc", ".nbi", ".nbc")):
            problems.append(f"{member}: should not be in the wheel")
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("wheel", nargs="?", help="the wheel to check (default: build one from the tracked files)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        if args.wheel is None:
            try:
                wheel = build_wheel(Path(tmp))
            except (subprocess.CalledProcessError, RuntimeError) as exc:
                print(f"check_wheel: no wheel could be built: {exc}", file=sys.stderr)
                return 2
        else:
            wheel = Path(args.wheel)
        files = referenced_data_files()
        problems = wheel_problems(wheel)
        print(f"check_wheel: {wheel.name}: {len(files)} data file(s) read beside the code: "
              + ", ".join(files))
        for problem in problems:
            print(f"check_wheel: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
