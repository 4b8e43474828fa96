"""experiments/op_minus_dp: the page is what the committed data give."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the experiments live beside the package, not in it
    sys.path.insert(0, str(ROOT))

from experiments import find  # noqa: E402
from experiments.__main__ import check, layout_problems  # noqa: E402


def test_op_minus_dp_page_is_rendered_from_its_data():
    ok, diff = check(find("op_minus_dp", ROOT), ROOT)
    assert ok, diff


def test_op_minus_dp_declares_its_files_and_records_them():
    assert layout_problems(ROOT, [find("op_minus_dp", ROOT)]) == []
