"""Every ``replica`` command honours --format table|csv|json; JSON never has NaN/Infinity."""

import csv
import io
import json

import pytest

from replica.cli import main

COMMANDS = {
    "table": ["table", "--kappa", "0.5", "1"],
    "capacity": ["capacity", "--d", "16"],
    "saddle": ["saddle", "--d", "8", "--p", "20"],
}


@pytest.mark.parametrize("fmt", ["table", "csv", "json"])
@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_formats(name, fmt, capsys):
    assert main([*COMMANDS[name], "--format", fmt]) == 0
    out = capsys.readouterr().out
    key = {"table": "kappa", "capacity": "p_c", "saddle": "q"}[name]
    if fmt == "json":
        def reject(token):
            raise AssertionError(f"JSON output contains {token}")

        rows = json.loads(out, parse_constant=reject)
        assert rows and key in rows[0]
    elif fmt == "csv":
        rows = list(csv.DictReader(io.StringIO(out)))
        assert rows and key in rows[0]
    else:
        assert key in out.splitlines()[0].split()


@pytest.mark.parametrize("argv", [["capacity", "--d", "16", "--seed", "-1"],
                                  ["saddle", "--d", "8", "--p", "20", "--seed", str(2**63)]])
def test_seed_range_exit_2(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "seed" in err
