"""Screening of DP full passes from per-input references (``notes/optimal_solver.md``, section 6)."""

from __future__ import annotations

import numpy as np

from .problem import select_rows

__all__ = ["DPScreen", "tracked_count"]


def tracked_count(n_cand):
    """Competitors tracked per input by the DP screen: 256, or an eighth of the candidates."""
    return max(256, n_cand // 8)


class DPScreen:
    """Screening of DP full passes from per-input references (``notes/optimal_solver.md``, section 6).

    When input ``mu`` is scanned in full at images ``Y0 = W0 e_mu``, the screen keeps
    ``Y0``, ``t_mu . Y0``, the ``tracked`` competitors with the smallest margins
    (``cand[mu]``), the smallest margin ``floor[mu]`` of all the others and the largest
    candidate norm ``unorm[mu]``.  At new images ``Y = (1 + a) Y0 + r`` (``r`` orthogonal
    to ``Y0``), every other competitor ``rho`` has margin
    ``m(rho) = (1 + a) m0(rho) + t.Y - (1 + a) t.Y0 - u_rho . r``, so for ``1 + a > 0``
    ``m(rho) >= (1 + a) floor + t.Y - (1 + a) t.Y0 - unorm ||r||`` (Cauchy-Schwarz).
    When that bound is at least the working-set threshold (which is >= 1), no other
    competitor can enter the working set, be violated or add to the loss, and only the
    tracked ones are regenerated and scored; the others inputs are scanned in full (and
    get new references).
    """

    def __init__(self, prob, tracked=None):
        p, d = prob.p, prob.d_out
        self.prob = prob
        self.tracked = min(prob.n_cand - 1, int(tracked or tracked_count(prob.n_cand)))
        self.images = np.zeros((p, d))
        self.target_scores = np.zeros(p)
        self.cand = np.zeros((p, self.tracked), dtype=np.int32)  # memory p L 4 bytes
        self.floor = np.full(p, -np.inf)  # -inf: no reference yet
        self.unorm = np.zeros(p)
        self.scanned = 0   # inputs scanned in full, over all passes
        self.screened = 0  # inputs whose untracked competitors were skipped

    def lower_bounds(self, Y, inputs):
        """Lower bound on the margin of every untracked competitor of ``inputs`` at images ``Y``."""
        prob = self.prob
        Y0 = self.images[inputs]
        t0 = self.target_scores[inputs]
        n0 = np.einsum("ij,ij->i", Y0, Y0)
        dY = Y - Y0
        a = np.einsum("ij,ij->i", dY, Y0) / np.where(n0 > 0, n0, 1.0)
        r_norm = np.linalg.norm(dY - a[:, None] * Y0, axis=1)
        scale = 1.0 + a
        tY = np.einsum("ij,ij->i", prob.targets[inputs], Y)
        unorm = self.unorm[inputs]
        bound = scale * self.floor[inputs] + (tY - scale * t0) - unorm * r_norm
        # float64 rounding of the stored and new margins, far below any working-set gap
        rounding = 1e-9 * (1.0 + np.abs(tY) + np.abs(scale * t0)
                           + unorm * (np.linalg.norm(Y, axis=1) + np.abs(scale) * np.sqrt(n0)))
        return np.where((scale > 0) & (n0 > 0), bound - rounding, -np.inf)

    def record(self, inputs, Y, M, norms):
        """New references of ``inputs`` from their full margins ``M`` at images ``Y``."""
        L = self.tracked
        part = np.argpartition(M, L, axis=1)
        self.cand[inputs] = part[:, :L]
        self.floor[inputs] = np.take_along_axis(M, part[:, L:L + 1], axis=1)[:, 0]
        self.images[inputs] = Y
        self.target_scores[inputs] = np.einsum("ij,ij->i", self.prob.targets[inputs], Y)
        self.unorm[inputs] = norms

    def block(self, Y, inputs, threshold, keep, tally):
        """One block of a screened full pass (``inputs`` contiguous), added to ``tally``.

        Input ``mu`` is screened when the bound ``lb`` on its untracked margins is >= 1
        (none violated) and either >= ``threshold`` (none enters the working set) or
        above its ``keep``-th smallest tracked margin (none is among the kept ones).
        """
        prob = self.prob
        lb = self.lower_bounds(Y[inputs], inputs)
        skip = lb >= threshold
        maybe = inputs[(lb >= 1.0) & ~skip]
        M_maybe = None
        if maybe.size and keep < self.tracked:  # the keep-th tracked margin decides
            M_maybe = prob.listed_margins(Y[maybe], maybe, self.cand[maybe])
            kth = np.partition(M_maybe, keep - 1, axis=1)[:, keep - 1]
            ok = lb[maybe - inputs[0]] > kth
            skip[maybe[ok] - inputs[0]] = True
            self._add_listed(maybe[ok], M_maybe[ok], threshold, keep, tally)
        full = inputs[~skip]
        if full.size:
            M, norms = prob.scan_margins(Y[full], full)
            self.record(full, Y[full], M, norms)
            r, cols = select_rows(M, threshold, keep, prob.n_cand - 1)
            tally.add(full, M, r, cols)
            self.scanned += full.size
        short = inputs[lb >= threshold]
        if short.size:
            self._add_listed(short, prob.listed_margins(Y[short], short, self.cand[short]), threshold, keep,
                             tally)

    def _add_listed(self, inputs, M, threshold, keep, tally):
        """Screened ``inputs`` with tracked margins ``M``: select among the tracked competitors."""
        if not inputs.size:
            return
        cand = self.cand[inputs]
        r, c = select_rows(M, threshold, keep, self.tracked)
        tally.add(inputs, M, r, cand[r, c], scanned=False)
        self.screened += inputs.size
