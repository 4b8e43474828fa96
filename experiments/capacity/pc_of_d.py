"""Measured capacity p_c(d) of the optimal memory against the finite-size theory: experiments/capacity/pc_of_d.png.

Every measured point is read from a committed result file, none is typed here:

* OP and DP, full rank, d = 16 .. 256: the full reproduction, ``experiments/reproduction/full/capacity.csv``
  (read with ``experiments/capacity/tables.py``'s ``read_run``);
* the single capacity sweeps recorded by ``benchmarks/bench_goals.py --long``
  (``benchmarks/goals/sweep_*.json``);
* OP at d = 512: the capacity command's output in ``experiments/capacity/capacity_d512_op.md`` (written
  by ``experiments/capacity/capacity_d512.py``).

A point with a fitted 95 % profile-likelihood interval (status ``ok``) or a bracket
(``separated``: all trials stored at one load, none at the next) is drawn with its
bar; any other status (``unbracketed``, ...) as an open marker without a bar, because
its interval is not a measurement.  The theory curve is ``replica.capacity(d).alpha``.
The script also prints every point beside the theory.

Usage::

    python -m experiments.capacity.pc_of_d             # experiments/capacity/pc_of_d.png
    python -m experiments.capacity.pc_of_d --out DIR   # DIR/pc_of_d.png
"""

from __future__ import annotations

import math
import re
from pathlib import Path


from validation.capacity.fit import separation_bracket

from experiments.capacity.headline import FULL_RUN, interval_text, read_run, sweep_records
from experiments.runner import run

HERE = Path(__file__).resolve().parent
D512 = HERE / "capacity_d512_op.md"
WITH_BAR = ("ok", "separated")


def load(d, p):
    """alpha = p ln p / d^2 (as validation.capacity.load)."""
    return p * math.log(p) / d ** 2


def bar(pt):
    """(low, high) of the drawn bar: the bracketing loads of a ``separated`` curve, else the fit's interval."""
    if pt["status"] == "separated" and "row" in pt:
        bracket = separation_bracket(pt["row"].get("curve", ()))
        if bracket is not None:
            return bracket
    return pt["low"], pt["high"]


def _d512_point():
    """The d = 512 OP estimate from the capacity command's output kept in ``experiments/capacity/capacity_d512_op.md``."""
    text = D512.read_text()
    m = re.search(r"measured\s+p_c = ([\d.]+)\s+95% \[([\d.]+), ([\d.]+)\]", text)
    status = re.search(r"^status: (\w+)", text, re.M)
    if m is None or status is None:
        raise ValueError(f"no 'measured p_c' and 'status' lines in {D512}")
    return {"problem": "op", "d": 512, "p_c": float(m.group(1)), "low": float(m.group(2)),
            "high": float(m.group(3)), "status": status.group(1), "source": D512.name}


def points():
    """Every measured full-rank optimal point: problem, d, p_c, low, high, status, source."""
    rows, meta = read_run(FULL_RUN)
    out = [{"problem": r["problem"], "d": int(r["d"]), "p_c": float(r["p_c"]), "low": float(r["p_c_low"]),
            "high": float(r["p_c_high"]), "status": r["status"], "source": "full run", "row": r}
           for r in rows if r["solver"] == "optimal" and float(r["kappa"]) == 1.0]
    for rec in sweep_records():
        e = rec["estimate"]
        out.append({"problem": e["problem"], "d": int(e["d"]), "p_c": float(e["p_c"]), "low": float(e["p_c_low"]),
                    "high": float(e["p_c_high"]), "status": e["status"], "source": f"sweep {rec['date']}",
                    "row": {"p_c": e["p_c"], "p_c_low": e["p_c_low"], "p_c_high": e["p_c_high"],
                            "status": e["status"], "curve": e["curve"]}})
    out.append(_d512_point())
    return out, meta


def draw(out):
    """Draw the figure into ``out`` and print every point beside the theory."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from replica import capacity

    measured, meta = points()
    dims = [16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 1024]
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    ax.plot(dims, [capacity(d).alpha for d in dims], "-", color="0.3", label="finite-size theory  p_c E[C_p] = d^2")
    ax.axhline(0.5, color="0.6", ls=":", label="asymptote alpha_c = 1/2")
    styles = {("op", "full run"): ("o", "C0", 1.0), ("dp", "full run"): ("s", "C1", 1.04)}
    labelled = set()
    for pt in measured:
        marker, color, shift = styles.get((pt["problem"], pt["source"]),
                                          ("D", "C2" if pt["problem"] == "op" else "C3", 0.96))
        label = f"{pt['problem'].upper()}, {pt['source'] if pt['source'] == 'full run' else 'single sweep'}"
        a = load(pt["d"], pt["p_c"])
        kw = {"color": color, "ms": 5, "label": None if label in labelled else label}
        labelled.add(label)
        if pt["status"] in WITH_BAR:
            low, high = bar(pt)
            err = [[a - load(pt["d"], low)], [load(pt["d"], high) - a]]
            ax.errorbar([pt["d"] * shift], [a], yerr=err, fmt=marker, capsize=3, **kw)
        else:
            ax.plot([pt["d"] * shift], [a], marker, mfc="none", **kw)
    ax.plot([], [], "o", mfc="none", color="0.4", label="open: no interval (e.g. unbracketed)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("d")
    ax.set_ylabel("alpha = p_c ln p_c / d^2")
    ax.set_title("Capacity of the optimal linear memory: simulation vs theory")
    ax.set_ylim(0.45, 1.1)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    print(f"full run: {meta['command']} (code {meta['code_commit']}, {meta['date']})")
    for pt in sorted(measured, key=lambda q: (q["problem"], q["d"])):
        th = capacity(pt["d"])
        text = interval_text(pt["row"]) if "row" in pt else f"{pt['p_c']:.1f} [{pt['low']:.1f}, {pt['high']:.1f}]"
        print(f"{pt['problem'].upper()} d={pt['d']:4d}  {pt['source']:>16}  p_c {text}  "
              f"alpha={load(pt['d'], pt['p_c']):.3f}  theory p_c={th.p_c:.1f} alpha={th.alpha:.3f}  "
              f"status {pt['status']}")


def _render(job) -> None:
    draw(HERE / "pc_of_d.png")


def main(argv=None) -> int:
    return run(__file__, __doc__, render=_render, argv=argv)


if __name__ == "__main__":
    raise SystemExit(main())
