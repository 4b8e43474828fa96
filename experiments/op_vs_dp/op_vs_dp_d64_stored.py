"""OP against DP at d = 64 just below the measured p_c, on stored instances only.

Solves three instances per problem at p = 0.97 x the measured p_c of
experiments/op_vs_dp/op_vs_dp_d64 (OP 577.6, DP 562.7) with the max-margin refinement on, keeps the
instances that are stored, and prints spectra and score statistics (units ||W||_F / d).
Usage: python -m experiments.op_vs_dp.op_vs_dp_d64_stored > experiments/op_vs_dp/README.md
"""
import numpy as np

from validation import make_instance, solve
from validation.measure import score_distribution, spectrum

D = 64
MEASURED_P_C = {"op": 577.6, "dp": 562.7}

print("| problem | p | stored | sv 4th moment | largest sv | competitor sd | target mean | target sd |"
      " top competitor mean | median target - top competitor | target / competitor sd |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for problem, p_c in MEASURED_P_C.items():
    p = int(round(0.97 * p_c))
    rows = []
    for seed in range(3):
        inst = make_instance(D, p, problem, "gaussian", 1000 + seed)
        sol = solve(inst, "optimal", refine=True, options={"refine_max_iter": 1500})
        if not sol.stored:
            continue
        sp = spectrum(sol.W)
        sc = score_distribution(inst, sol.W)
        comp = np.asarray(sc.competitors)
        rows.append((sp.fourth_moment, float(np.max(sp.values)), float(comp.std()),
                     float(np.mean(sc.targets)), float(np.std(sc.targets)),
                     float(np.mean(sc.top_competitors)),
                     float(np.median(np.asarray(sc.targets) - np.asarray(sc.top_competitors)))))
    if not rows:
        print(f"| {problem} | {p} | 0/3 | | | | | | | | |")
        continue
    r = np.mean(np.array(rows), axis=0)
    print(f"| {problem.upper()} | {p} | {len(rows)}/3 | {r[0]:.3f} | {r[1]:.3f} | {r[2]:.3f} | {r[3]:.3f} |"
          f" {r[4]:.3f} | {r[5]:.3f} | {r[6]:.4f} | {r[3] / r[2]:.3f} |", flush=True)
