"""The result contract holds for every public result type of both packages.

Each type must be a frozen dataclass deriving from ``replica.common.results.Result`` with
the fields ``status``, ``converged`` and ``message`` and a documented, non-empty set of
``STATUSES``.  The per-type tests next to each module's tests build real normal and failed
results; this file builds every type with NaN/inf in every field it can hold and checks
that ``json.dumps(r.to_dict(), allow_nan=False)`` still works.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import math
import pkgutil

import numpy as np
import pytest

import replica
import validation
from replica.common.results import Result, json_safe

def _modules(package):
    yield package
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        if info.name.endswith("__main__"):
            continue
        yield importlib.import_module(info.name)


def _result_types():
    found = {}
    for package in (replica, validation):
        for module in _modules(package):
            for value in vars(module).values():
                if isinstance(value, type) and issubclass(value, Result) and value is not Result:
                    found[value.__qualname__] = value
    return sorted(found.values(), key=lambda t: t.__qualname__)


RESULT_TYPES = _result_types()


def test_the_contract_is_used():
    # A regression guard: the package has a dozen or more result types on the contract.
    assert len(RESULT_TYPES) >= 12


@pytest.mark.parametrize("cls", RESULT_TYPES, ids=lambda c: c.__qualname__)
def test_result_type_has_the_contract(cls):
    assert dataclasses.is_dataclass(cls)
    params = cls.__dataclass_params__
    assert params.frozen, f"{cls.__qualname__} must be frozen"
    names = {f.name for f in dataclasses.fields(cls)}
    assert {"status", "converged", "message"} <= names
    assert cls.STATUSES and all(isinstance(s, str) and s for s in cls.STATUSES)
    doc = cls.__doc__ or ""
    for status in cls.STATUSES:
        assert status in doc, f"{cls.__qualname__} does not document its status {status!r}"


def _hostile(annotation: str):
    """A degenerate value for a field of this annotation (NaN wherever a float can be)."""
    a = annotation.replace(" ", "")
    if a.startswith("bool"):
        return False
    if a.startswith("int"):
        return 0
    if a.startswith("str"):
        return ""
    if a.startswith(("dict", "Mapping")):
        return {"x": math.nan, "y": [math.inf]}
    if a.startswith(("tuple", "list")):
        return ()  # sequences hold typed records (e.g. CurvePoint); empty is the failed case
    if "ndarray" in a:
        return np.array([math.nan, math.inf, 1.0])
    if a.startswith("float") or a == "":
        return math.nan
    return None


@pytest.mark.parametrize("cls", RESULT_TYPES, ids=lambda c: c.__qualname__)
def test_degenerate_result_is_strict_json(cls):
    # A failed computation fills its fields with NaN/inf; to_dict must still be valid JSON
    # (json.dumps(..., allow_nan=False)) with the three contract fields present.
    kwargs = {f.name: _hostile(str(f.type)) for f in dataclasses.fields(cls) if f.init}
    kwargs.update(status=cls.STATUSES[-1], converged=False, message="failed")
    result = cls(**kwargs)
    data = json.loads(json.dumps(result.to_dict(), allow_nan=False))
    assert data["status"] == cls.STATUSES[-1] and data["converged"] is False
    assert data["message"] == "failed"


@pytest.mark.parametrize("cls", RESULT_TYPES, ids=lambda c: c.__qualname__)
def test_unknown_status_is_rejected(cls):
    fields = dataclasses.fields(cls)
    # Build the type with placeholder values; only the status check matters here.
    kwargs = {f.name: None for f in fields if f.init}
    kwargs.update(status="no-such-status", converged=False, message="")
    with pytest.raises(ValueError, match="status"):
        cls(**kwargs)


def test_json_safe_replaces_non_finite_values():
    data = {"a": math.nan, "b": [np.inf, -np.inf, 1.5], "c": np.float32(2.0), "d": np.int64(3),
            "e": np.array([1.0, np.nan]), "f": (np.bool_(True), None), 7: "x"}
    out = json_safe(data)
    assert json.loads(json.dumps(out, allow_nan=False)) == {
        "a": None, "b": [None, None, 1.5], "c": 2.0, "d": 3, "e": [1.0, None], "f": [True, None],
        "7": "x"}
