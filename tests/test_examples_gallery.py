"""The example gallery (``examples/``) and the check that the built site's formulas render.

The documentation build runs the examples (sphinx-gallery); these tests check what the
build needs from each script without running it, and that
``tools/check_math_rendered.py`` finds raw TeX where there is some.
"""

from __future__ import annotations

import ast
import importlib.util
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("plot_*.py"))


def _check_tool():
    spec = importlib.util.spec_from_file_location("check_math_rendered", ROOT / "tools" / "check_math_rendered.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_gallery_has_six_examples():
    assert len(EXAMPLES) >= 6, [p.name for p in EXAMPLES]
    assert (ROOT / "examples" / "GALLERY_HEADER.rst").is_file()


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_an_example_has_a_title_one_thread_and_public_names(path):
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    doc = ast.get_docstring(tree, clean=False) or ""
    lines = [line for line in doc.strip("\n").splitlines()]
    assert len(lines) >= 3 and set(lines[1]) == {"="} and len(lines[1]) >= len(lines[0]), \
        f"{path.name}: the docstring opens with a title underlined with '='"
    calls = [ast.unparse(node) for node in ast.walk(tree) if isinstance(node, ast.Call)]
    assert "set_threads(1)" in calls, f"{path.name}: set numba and BLAS to one thread"
    assert any("plt.show" in call or "savefig" in call for call in calls), f"{path.name}: draws no figure"
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Attribute):
            names = [ast.unparse(node)]
        for name in names:
            parts = name.split(".")
            if parts[0] in ("replica", "validation"):
                assert not any(p.startswith("_") for p in parts), f"{path.name}:{node.lineno}: private name {name}"


def test_raw_delimiters_are_found():
    tool = _check_tool()
    assert tool.raw_delimiters("a norm \\(x\\) here") and tool.raw_delimiters("$$x$$") and tool.raw_delimiters("\\[x")
    assert tool.raw_delimiters("costs $5 and $6, a (bracket) [1]") == []


@pytest.mark.skipif(shutil.which("chromium") is None, reason="Debian's chromium is not installed")
def test_the_math_check_fails_on_raw_tex_and_passes_without(tmp_path, capsys):
    tool = _check_tool()
    (tmp_path / "bad").mkdir()
    (tmp_path / "good").mkdir()
    (tmp_path / "bad" / "page.html").write_text(
        "<!DOCTYPE html><html><body><p>The norm \\(\\lVert W\\rVert_F\\) is fixed.</p></body></html>")
    (tmp_path / "good" / "page.html").write_text(
        "<!DOCTYPE html><html><body><p>No formula.</p><pre>\\(shown as code\\) $$</pre></body></html>")
    assert tool.main([str(tmp_path / "bad")]) == 1
    assert "raw TeX in page.html" in capsys.readouterr().out
    assert tool.main([str(tmp_path / "good")]) == 0
