"""OP against DP near capacity at d = 64: capacity, spectra, scores."""
import sys
from dataclasses import replace

from validation.reproduce import FULL, reproduce
from validation.sweep import make_executor

if __name__ == "__main__":
    config = replace(FULL, name="op-vs-dp-d64", optimal_dims=(64,), hebbian_dims=(64,), kappa_dim=64,
                     kappas=(), trials=8, rounds=1, initial_points=4, spectra_dim=64, spectra_instances=3,
                     spectra_kappa=0.5, theory_dims=(16, 32, 64, 128, 256), time_limit=120.0)
    print(config, file=sys.stderr)
    executor = make_executor("local", workers=1)
    try:
        res = reproduce(sys.argv[1], config, executor=executor, progress=False, log=sys.stderr)
    finally:
        executor.shutdown()
    print(res, file=sys.stderr)
