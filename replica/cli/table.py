"""``replica table``: the asymptotic capacity alpha_c(kappa) of rank-constrained memories."""

from __future__ import annotations

import sys

from ..common.checks import check_kappa
from ..common.cliutil import add_command, add_progress_option, parse_grid, progress, render

DEFAULT_KAPPAS = [0.05, 0.1, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.9, 1.0]
COLUMNS = ["kappa", "s_kappa", "alpha_c", "alpha_c_hebbian"]


def register(subparsers) -> None:
    parser = add_command(
        subparsers, "table", run,
        help="asymptotic capacity alpha_c(kappa) = F(kappa)/2 and the Hebbian F(kappa)/8",
        description=(
            "Print s_kappa (truncation point of the quarter-circle law), the asymptotic "
            "capacity alpha_c(kappa) = p ln p / d^2 of an optimal rank-kappa*d memory, and "
            f"the Hebbian value F(kappa)/8.  Default: a grid from {DEFAULT_KAPPAS[0]:g} to {DEFAULT_KAPPAS[-1]:g}."
        ),
    )
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--kappa", type=float, nargs="+", metavar="K", help="rank fractions in (0, 1]")
    group.add_argument("--kappa-grid", metavar="START:STOP:NUM",
                       help="NUM evenly spaced rank fractions from START to STOP (inclusive)")
    parser.add_argument("--dps", type=int, default=None, metavar="N",
                        help="use the independent mpmath quadrature path with N digits "
                             "(table/csv show N significant digits; JSON numbers are float64)")
    add_progress_option(parser)


def rows_for(kappas, dps=None, bar=None):
    """Rows of the table for the given rank fractions (float64 or mpmath path).

    ``bar.update()`` is called after each kappa of the mpmath path (a progress bar).
    """
    import replica

    kappas = [float(k) for k in check_kappa(kappas).ravel()]
    if dps is None:
        s = replica.truncation_point(kappas)
        a = replica.alpha_c(kappas)
        h = replica.alpha_c_hebbian(kappas)
        return [{"kappa": k, "s_kappa": float(si), "alpha_c": float(ai), "alpha_c_hebbian": float(hi)}
                for k, si, ai, hi in zip(kappas, s, a, h)]
    rows = []
    for k in kappas:
        si = replica.truncation_point_mp(k, dps=dps)
        ai = replica.alpha_c_mp(k, dps=dps)
        rows.append({"kappa": k, "s_kappa": si, "alpha_c": ai, "alpha_c_hebbian": ai / 4})
        if bar is not None:
            bar.update()
    return rows


def run(args) -> int:
    if args.kappa is not None:
        kappas = args.kappa
    elif args.kappa_grid is not None:
        kappas = parse_grid(args.kappa_grid, "--kappa-grid")
    else:
        kappas = DEFAULT_KAPPAS
    bar = progress(args, len(kappas), "replica table") if args.dps is not None else None
    try:
        rows = rows_for(kappas, dps=args.dps, bar=bar)
    finally:
        if bar is not None:
            bar.close()
    if args.dps is not None:
        import mpmath

        if args.format == "json":
            rows = [{k: float(v) for k, v in row.items()} for row in rows]
        else:
            rows = [{k: (mpmath.nstr(v, args.dps) if isinstance(v, mpmath.mpf) else v)
                     for k, v in row.items()} for row in rows]
    render(rows, COLUMNS, args.format, digits=6, stream=sys.stdout)
    return 0
