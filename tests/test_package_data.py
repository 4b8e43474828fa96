"""Every data file the code reads beside itself is in the source tree and ships in the wheel.

Users install a wheel, not the source tree: a table that a module opens through
``Path(__file__)`` or ``importlib.resources`` but that ``[tool.setuptools.package-data]``
of ``pyproject.toml`` leaves out works in an editable install and raises
``FileNotFoundError`` in a real one.  ``tools/check_wheel.py`` finds those files in the
source (with ``ast``) and applies setuptools' rules to the configuration; the slow test
builds the wheel and looks inside it.
"""

from __future__ import annotations

import importlib.util
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _tool():
    spec = importlib.util.spec_from_file_location("check_wheel", ROOT / "tools" / "check_wheel.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


check_wheel = _tool()

_SOURCE = '''
import os
from importlib import resources
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
NAME = "e.json"
TABLE = HERE / "a.json"
OPTIONAL = HERE / "g.json"


def read(out):
    np.load(os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "b.npz"))
    resources.files("pkg.sub").joinpath("c.csv").read_text()
    (resources.files(__package__) / "d.txt").read_text()
    (HERE / NAME).read_text()
    Path(__file__).parents[1].joinpath("f.json").read_text()
    [p.read_text() for p in HERE.glob("*.npz")]
    os.path.join(out, "written.csv")          # a file the code writes elsewhere: not a data file of the package
    Path(out) / "report.json"
    if OPTIONAL.exists():
        OPTIONAL.read_text()


def shadowed(HERE):
    return HERE / "not_beside_the_module.json"  # a parameter, not the module's HERE
'''


def test_the_scanner_finds_every_way_of_reading_beside_the_module():
    found = check_wheel.module_data_files(_SOURCE, "pkg/sub/mod.py")
    assert {name: ref["optional"] for name, ref in found.items()} == {
        "pkg/sub/a.json": False, "pkg/sub/data/b.npz": False, "pkg/sub/c.csv": False, "pkg/sub/d.txt": False,
        "pkg/sub/e.json": False, "pkg/f.json": False, "pkg/sub/*.npz": False, "pkg/sub/g.json": True}
    assert found["pkg/sub/a.json"]["lines"] == [10]


@pytest.mark.parametrize("path, pattern, expected", [
    ("variants/few_outputs_table.json", "**/*.json", True),
    ("table.json", "**/*.json", True),               # ** spans no folder too
    ("common/validity_table.json", "common/validity_table.json", True),
    ("variants/few_outputs_table.json", "common/validity_table.json", False),
    ("variants/few_outputs_table.json", "*.json", False),   # * stays inside one folder
    ("optimal/cost_table.npz", "**/*.json", False),
    ("optimal/cost_table.npz", "optimal/*.npz", True),
])
def test_patterns_follow_setuptools_globs(path, pattern, expected):
    assert check_wheel.matches(path, pattern) is expected


def test_every_data_file_the_code_reads_is_in_the_tree():
    references = check_wheel.referenced_data_files()
    # the two tables named in the package-data comment of pyproject.toml are found by the scan
    assert {"replica/common/validity_table.json", "replica/variants/few_outputs_table.json"} <= set(references)
    missing = check_wheel.missing()
    assert not missing, "data files the code reads are missing from the source tree:\n" + "\n".join(missing)


def test_every_data_file_the_code_reads_ships_in_the_wheel():
    unshipped = check_wheel.unshipped(check_wheel.package_data())
    assert not unshipped, ("[tool.setuptools.package-data] of pyproject.toml leaves out data files the code "
                           "reads (a wheel install raises FileNotFoundError):\n" + "\n".join(unshipped))


def test_every_data_file_in_the_packages_ships():
    config = check_wheel.package_data()
    files = [p.relative_to(ROOT).as_posix() for package in check_wheel.PACKAGES for p in (ROOT / package).rglob("*")
             if p.is_file() and p.name.lower().endswith(check_wheel.DATA_SUFFIXES) and "__pycache__" not in p.parts]
    left_out = [f for f in files if not check_wheel.shipped(f, config)]
    assert not left_out, "data files in the package folders that the wheel leaves out:\n" + "\n".join(left_out)


def test_the_check_fails_on_a_configuration_that_leaves_a_table_out():
    # the configuration before the few-outputs table was shipped
    unshipped = check_wheel.unshipped({"replica": ["common/validity_table.json"]})
    assert any(line.startswith("replica/variants/few_outputs_table.json (referenced at "
                               "replica/variants/few_outputs.py:") for line in unshipped), unshipped
    assert not any(line.startswith("replica/common/validity_table.json") for line in unshipped)


@pytest.mark.slow
def test_the_built_wheel_holds_every_data_file(tmp_path):
    wheel = check_wheel.build_wheel(tmp_path)
    problems = check_wheel.wheel_problems(wheel)
    assert not problems, f"{wheel.name}:\n" + "\n".join(problems)
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
    for name in check_wheel.referenced_data_files():
        assert set(check_wheel.expand(name)) <= names


def test_the_wheel_check_names_what_a_wheel_lacks(tmp_path):
    wheel = tmp_path / "lacking-0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("replica/__init__.py", "")
        zf.writestr("replica/common/validity_table.json", "{}")
        zf.writestr("replica/__pycache__/x.cpython-311.pyc", "")
    problems = check_wheel.wheel_problems(wheel)
    assert any(p.startswith("replica/variants/few_outputs_table.json (referenced at ") and p.endswith(
        "not in the wheel") for p in problems), problems
    assert "replica/__pycache__/x.cpython-311.pyc: should not be in the wheel" in problems
    assert not any(p.startswith("replica/common/validity_table.json") for p in problems)
