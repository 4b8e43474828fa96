"""Measured OP capacity p_c(d) against the finite-size theory: docs/pc_of_d.png.

The measured points are the results of these runs (seed 0, gaussian embeddings, solver
``optimal``), copied from their outputs (README, "Theory against simulation"):

* d = 16, 32, 64: ``validation compare --trials 10 --rounds 1 --workers 2 --time-limit 40``
  (OP and DP rows);
* d = 128: ``validation capacity --d 128 --problem op --solver optimal --trials 8 --workers 2``
  (5-point grid design);
* d = 256: the same command with ``--d 256`` (bracketing design),
  output in ``docs/capacity_d256_op.txt``;
* DP at d = 128 and 256: the full reproduction, ``validation reproduce --workers 2``
  (``docs/full/capacity.csv``; bracketing design, first step 1 %, 8 trials per point at
  d = 128 and 4 at d = 256, where the 95 % interval is not closed: drawn open, without a bar);
* OP at d = 512: ``python docs/capacity_d512.py STORE docs/capacity_d512_op.md``
  (bracketing design, first step 1 %, 4 trials per point).

The theory curve is computed here: ``replica.finite_size.capacity(d).alpha``.

Usage::

    python docs/pc_of_d.py docs/pc_of_d.png
"""

from __future__ import annotations

import math
import sys

import numpy as np

# d: (p_c, low, high) of the 95 % profile-likelihood interval
MEASURED_OP = {16: (62.2, 62.0, 65.5), 32: (191.4, 187.0, 193.0), 64: (577.0, 568.9, 603.6),
               128: (1826.5, 1822.7, 1831.5), 256: (6035.9, 6020.0, 6050.5), 512: (20396.7, 20292.6, 20501.4)}
MEASURED_DP = {16: (61.9, 59.5, 62.7), 32: (181.5, 179.6, 182.1), 64: (565.9, 557.7, 576.6),
               128: (1811.2, 1806.2, 1818.1)}
# point estimates whose 95 % interval was not closed (fit status "unbracketed")
OPEN_DP = {256: 5969.9}


def load(d, p):
    """alpha = p ln p / d^2 (as validation.capacity.load)."""
    return p * math.log(p) / d ** 2


def main(out):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from replica.finite_size import capacity

    dims = [16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 1024]
    theory = [capacity(d).alpha for d in dims]
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    ax.plot(dims, theory, "-", color="0.3", label="finite-size theory  p_c E[C_p] = d^2")
    ax.axhline(0.5, color="0.6", ls=":", label="asymptote alpha_c = 1/2")
    for name, data, marker, shift in (("measured OP", MEASURED_OP, "o", 1.0),
                                      ("measured DP", MEASURED_DP, "s", 1.04)):
        ds = np.array(sorted(data))
        a = np.array([load(d, data[d][0]) for d in ds])
        lo = a - np.array([load(d, data[d][1]) for d in ds])
        hi = np.array([load(d, data[d][2]) for d in ds]) - a
        ax.errorbar(ds * shift, a, yerr=[lo, hi], fmt=marker, ms=5, capsize=3, label=name)
    for d, p_c in OPEN_DP.items():
        ax.plot([d * 1.04], [load(d, p_c)], "s", mfc="none", color="C1", ms=6,
                label=f"measured DP, d = {d}: 8 trials, interval not closed")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("d")
    ax.set_ylabel("alpha = p_c ln p_c / d^2")
    ax.set_title("Capacity of the optimal linear memory: simulation vs theory")
    ax.set_ylim(0.45, 1.1)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    for name, data in (("OP", MEASURED_OP), ("DP", {**MEASURED_DP, **{d: (p,) for d, p in OPEN_DP.items()}})):
        for d in sorted(data):
            p_c = data[d][0]
            th = capacity(d)
            print(f"{name} d={d:4d}  measured p_c={p_c:8.1f}  alpha={load(d, p_c):.3f}   theory p_c={th.p_c:8.1f} "
                  f"alpha={th.alpha:.3f}  diff={100 * (p_c / th.p_c - 1):+.1f}%")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "pc_of_d.png")
