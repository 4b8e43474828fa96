"""``bits_per_parameter`` on every capacity result: ``p_c log2 p_c`` over the free parameters.

The reference values are computed here with their own arithmetic: ``d_in d_out`` parameters
at full rank, ``m (d_in + d_out - m)`` at rank ``m = round(kappa min(d_in, d_out))``.
"""

import json
import math

import pytest

import replica
from replica.common.loads import bits_per_parameter, free_parameters, p_from_load


def _bits(p, params):
    return p * math.log(p) / math.log(2.0) / params


@pytest.mark.parametrize("d_in, d_out, kappa, params", [
    (64, 64, 1.0, 64 * 64),
    (32, 48, 1.0, 32 * 48),
    (64, 64, 0.5, 32 * (64 + 64 - 32)),
    (32, 48, 0.25, 8 * (32 + 48 - 8)),
    (10, 10, 0.25, 2 * (10 + 10 - 2)),     # round(2.5) = 2: halves to even, as rank_for
])
def test_free_parameters(d_in, d_out, kappa, params):
    assert free_parameters(d_in, d_out, kappa) == params
    assert math.isclose(bits_per_parameter(1000.0, d_in, d_out, kappa), _bits(1000.0, params), rel_tol=1e-14)


def test_square_default_and_nan():
    assert free_parameters(16) == 256
    assert math.isnan(bits_per_parameter(math.nan, 16))
    assert math.isnan(bits_per_parameter(0.0, 16))


def test_half_load_is_one_over_two_ln_two():
    d = 4096
    p = p_from_load(d, 0.5, "lambertw")
    assert math.isclose(bits_per_parameter(p, d), 1.0 / (2.0 * math.log(2.0)), rel_tol=1e-12)


def _check(result, params):
    expected = _bits(result.p_c, params)
    assert math.isclose(result.bits_per_parameter, expected, rel_tol=1e-13)
    data = result.to_dict()
    assert math.isclose(data["bits_per_parameter"], expected, rel_tol=1e-13)
    json.dumps(data, allow_nan=False)


def test_capacity_full_rank_and_rank_m():
    _check(replica.capacity(64), 64 * 64)
    r = replica.capacity(64, kappa=0.5)
    _check(r, 32 * (128 - 32))
    assert math.isclose(replica.capacity(64).bits_per_parameter, replica.capacity(64).alpha / math.log(2.0),
                        rel_tol=1e-13)


def test_rectangular_capacity():
    _check(replica.variants.rectangular_capacity(32, 48), 32 * 48)
    r = replica.variants.rectangular_capacity(32, 48, kappa=0.5)
    assert r.rank == 16
    _check(r, 16 * (32 + 48 - 16))
    _check(replica.variants.rectangular_hebbian_capacity(32, 48), 32 * 48)


def test_hebbian_and_accuracy_capacity():
    _check(replica.hebbian_capacity(64), 64 * 64)
    _check(replica.accuracy_capacity(32, 0.9, memory="hebbian"), 32 * 32)
    _check(replica.accuracy_capacity(32, 0.9, kappa=0.5), 16 * (64 - 16))


def test_replica_capacity_table_has_the_column(capsys):
    from replica.cli import main

    assert main(["capacity", "--d", "16", "--format", "csv"]) == 0
    header, row = capsys.readouterr().out.strip().splitlines()[:2]
    names = header.split(",")
    assert names.index("bits_per_parameter") == names.index("validity") - 1
    values = dict(zip(names, row.split(",")))
    assert math.isclose(float(values["bits_per_parameter"]), _bits(float(values["p_c"]), 16 * 16), rel_tol=1e-5)
