"""reproduce: the report pipeline on a tiny configuration, and its bad input."""

import dataclasses
import os

import pytest

from validation.reproduce import QUICK, reproduce
from validation.store import ResultStore


def _tiny():
    return dataclasses.replace(QUICK, optimal_dims=(6,), hebbian_dims=(8,), kappa_dim=6, kappas=(0.5,),
                               trials=4, rounds=0, initial_points=3, spectra_dim=6, spectra_instances=2,
                               theory_dims=(6, 8, 16))


@pytest.mark.slow
def test_tiny_reproduce_writes_every_output_and_resumes(tmp_path):
    res = reproduce(str(tmp_path), _tiny())
    names = sorted(os.path.basename(f) for f in res.figures)
    assert names == ["fig1_success_probability.png", "fig2_alpha_vs_d.png", "fig3_alpha_kappa.png",
                     "fig4_spectra.png", "fig5_scores.png"]
    for f in res.figures:
        assert os.path.getsize(f) > 10_000  # a real image, not an empty canvas
    report = open(res.report).read()
    for f in names:
        assert f"]({f})" in report
    assert "finite-size theory" in report and "OP against DP" in report
    # generated text carries the measured numbers
    cap = open(os.path.join(tmp_path, "capacity.csv")).read().splitlines()
    assert len(cap) == 1 + 4  # OP, DP, Hebbian, kappa = 0.5
    # a second run reuses every trial: no row is rewritten
    before = {(r["experiment"], r["p"], r["trial"], r["solver"], r["kappa"]): r["created"]
              for r in ResultStore(tmp_path, readonly=True).rows()}
    again = reproduce(str(tmp_path), _tiny())
    after = {(r["experiment"], r["p"], r["trial"], r["solver"], r["kappa"]): r["created"]
             for r in ResultStore(tmp_path, readonly=True).rows()}
    assert again.trials_run == res.trials_run and before == after
