"""Capacity under the cross-entropy protocol of Nichani, Lee & Bietti (2024).

The protocol measures how many facts a linear associative memory learns by gradient
training: fact ``i`` (input ``e_i``) must be answered by ``u_i`` among all ``N``
answers (the identity map of the original problem, ``problem="op"``), inputs and
answers uniform on the unit sphere (``ensemble="sphere"``).  A full-rank ``d x d``
memory is trained by full-batch Adam on the mean softmax cross-entropy (learning rate
1000, ``2**12`` steps, early stop once the recall accuracy reaches the target), and
the capacity of one seed is the largest ``N`` whose run reaches accuracy ``>= 0.99``,
located by bisection in ``[d, d^2 / 2]`` to 1 %.  Every trial is a fresh instance.

:func:`ce_capacity` runs the search per seed on :func:`validation.solvers.adam.solve_adam`
and returns a :class:`CECapacity`.  The protocol, its differences from the paper's code
and the measured table are in ``notes/ce_protocol.md``.
"""

from __future__ import annotations

import dataclasses
import math
import sys
import time
from dataclasses import dataclass
from typing import Callable, ClassVar

import numpy as np

from replica.common.checks import check_choice, check_int, check_real
from replica.common.loads import p_from_load
from replica.common.results import Result
from replica.common.seeds import resolve_seed

from ..instances.ensembles import ENSEMBLES, EmbeddingModel, make_instance
from ..solvers.adam import solve_adam
from ..solvers.engine.options import AdamOptions

__all__ = ["CEProtocol", "SeedCapacity", "CECapacity", "ce_capacity", "adam_trial", "search_range",
           "trial_seed"]


@dataclass(frozen=True)
class CEProtocol:
    """Settings of the cross-entropy capacity protocol (defaults: the paper's code).

    Attributes
    ----------
    learning_rate : float
        Adam step size (1000).
    max_iter : int
        Full-batch steps per run (``2**12 = 4096``).
    check_every : int
        Accuracy checked every this many steps (32, the paper's ``steps // 128``).
    weight_decay : float
        Decoupled (AdamW) weight decay (0: the paper's code calls ``optax.adamw`` with
        ``weight_decay=0.``, not optax's default 1e-4).
    init : {"lecun_normal", "zero"}
        Start of W (``"lecun_normal"``: the default kernel initialisation of the
        paper's bias-free ``flax`` Dense layer).
    ensemble : {"sphere", "gaussian"}
        Inputs and answers (``"sphere"``: unit-norm Gaussian vectors, as in the paper).
    lower, upper : float
        Search range ``[ceil(lower d), floor(upper d^2)]`` (1 and 1/2).
    resolution : float
        The search stops when ``high / low <= 1 + resolution`` or ``high - low <= 1``
        (0.01).
    start_alpha : float or None
        ``None`` (default): the paper's bisection, first trial at the middle of the
        range.  A load ``alpha``: start at the ``N`` with ``N ln N = alpha d^2`` and
        bracket by factors ``bracket_factor`` before bisecting, which avoids the costly
        runs far above capacity (the same answer for a monotone pass/fail, cheaper).
    bracket_factor : float
        Step of the bracketing in guided mode, > 1 (1.1).

    Raises
    ------
    ValueError
        For a value out of range (named in the message).
    """

    learning_rate: float = 1000.0
    max_iter: int = 4096
    check_every: int = 32
    weight_decay: float = 0.0
    init: str = "lecun_normal"
    ensemble: str = "sphere"
    lower: float = 1.0
    upper: float = 0.5
    resolution: float = 0.01
    start_alpha: float | None = None
    bracket_factor: float = 1.1

    def __post_init__(self):
        fix = self._set
        fix("learning_rate", check_real(self.learning_rate, "learning_rate", low=0.0, low_open=True))
        fix("max_iter", check_int(self.max_iter, "max_iter", low=1))
        fix("check_every", check_int(self.check_every, "check_every", low=1))
        fix("weight_decay", check_real(self.weight_decay, "weight_decay", low=0.0))
        fix("init", check_choice(self.init, "init", ("lecun_normal", "zero")))
        fix("ensemble", check_choice(self.ensemble, "ensemble", ENSEMBLES))
        fix("lower", check_real(self.lower, "lower", low=0.0, low_open=True))
        fix("upper", check_real(self.upper, "upper", low=0.0, low_open=True))
        fix("resolution", check_real(self.resolution, "resolution", low=0.0, low_open=True))
        if self.start_alpha is not None:
            fix("start_alpha", check_real(self.start_alpha, "start_alpha", low=0.0, low_open=True))
        fix("bracket_factor", check_real(self.bracket_factor, "bracket_factor", low=1.0, low_open=True))

    def _set(self, name, value):
        object.__setattr__(self, name, value)

    def adam_options(self, accuracy: float) -> AdamOptions:
        """The :class:`AdamOptions` of one run at target ``accuracy`` (early stop there)."""
        return AdamOptions(learning_rate=self.learning_rate, check_every=self.check_every,
                           init=self.init, stop_accuracy=accuracy, weight_decay=self.weight_decay)

    def to_dict(self) -> dict:
        """The settings as a JSON-safe dictionary."""
        return dataclasses.asdict(self)


def search_range(d: int, settings: CEProtocol) -> tuple[int, int]:
    """``(ceil(lower d), floor(upper d^2))``, the range of the search at dimension ``d``.

    Raises
    ------
    ValueError
        If the range holds fewer than two loads ``N >= 2``.
    """
    low = max(2, math.ceil(settings.lower * d))
    high = math.floor(settings.upper * d * d)
    if high <= low:
        raise ValueError(f"the search range [{low}, {high}] of d = {d} (lower = {settings.lower:g} d, "
                         f"upper = {settings.upper:g} d^2) must hold at least two loads; use a larger d")
    return low, high


def trial_seed(seed: int, index: int, n: int) -> int:
    """Instance seed of seed number ``index`` at load ``n``: ``SeedSequence(seed, spawn_key=(index, n))``."""
    return resolve_seed(np.random.SeedSequence(seed, spawn_key=(index, n)))


def adam_trial(d: int, n: int, seed: int, settings: CEProtocol, accuracy: float) -> float:
    """One run of the protocol: the recall fraction Adam reaches on a fresh instance.

    The instance is ``make_instance(d, n, "op", settings.ensemble, seed)``; the run
    stops early once the verified recall fraction is ``>= accuracy``.
    """
    instance = make_instance(d, n, "op", seed=seed, embeddings=EmbeddingModel(settings.ensemble))
    return solve_adam(instance, max_iter=settings.max_iter, options=settings.adam_options(accuracy)).recall_fraction


@dataclass(frozen=True)
class SeedCapacity(Result):
    """Capacity search of one seed.

    Attributes
    ----------
    index : int
        Seed number (instances from :func:`trial_seed`).
    capacity : float
        Largest load that reached the accuracy (``low``); NaN when unbracketed.
    low, high : float
        Largest passing and smallest failing load seen (NaN when none).
    alpha : float
        ``capacity ln(capacity) / d^2``.
    trials : tuple of (int, float)
        ``(N, accuracy reached)`` of every run, in order.
    status : {"ok", "unbracketed"}
        ``"ok"``: a passing and a failing load within ``resolution``.
        ``"unbracketed"``: the bottom of the range fails or its top passes.
    converged : bool
        ``status == "ok"``.
    message : str
    """

    STATUSES: ClassVar[tuple[str, ...]] = ("ok", "unbracketed")

    index: int
    capacity: float
    low: float
    high: float
    alpha: float
    trials: tuple
    status: str
    converged: bool
    message: str


@dataclass(frozen=True)
class CECapacity(Result):
    """Cross-entropy (Adam) capacity at one dimension over several seeds.

    Attributes
    ----------
    d : int
    accuracy : float
        Target recall accuracy.
    capacities : tuple of float
        Per-seed capacities (NaN for an unbracketed seed).
    mean, std, minimum, maximum : float
        Over the bracketed seeds (std with ``ddof = 1``; NaN with fewer than two).
    alpha : float
        Mean over the bracketed seeds of ``N ln N / d^2``.
    per_seed : tuple of SeedCapacity
    seed : int
        Base seed (``replica.common.seeds.resolve_seed``).
    settings : dict
        The :class:`CEProtocol` used.
    seconds : float
    status : {"ok", "unbracketed"}
        ``"ok"``: every seed bracketed; ``"unbracketed"``: at least one seed was not
        (the summary is over the others; NaN when none was).
    converged : bool
        ``status == "ok"``.
    message : str
    """

    STATUSES: ClassVar[tuple[str, ...]] = ("ok", "unbracketed")

    d: int
    accuracy: float
    capacities: tuple
    mean: float
    std: float
    minimum: float
    maximum: float
    alpha: float
    per_seed: tuple
    seed: int
    settings: dict
    seconds: float
    status: str
    converged: bool
    message: str = ""


class _Search:
    """Bisection of one seed: pass/fail runs, bracketing in guided mode, range ends."""

    def __init__(self, d, accuracy, settings, run):
        self.d, self.accuracy, self.o, self.run = d, accuracy, settings, run
        self.range = search_range(d, settings)
        self.trials = []
        self.passed, self.failed = [], []

    def test(self, n):
        fraction = float(self.run(n))
        self.trials.append((int(n), fraction))
        ok = fraction >= self.accuracy
        (self.passed if ok else self.failed).append(int(n))
        return ok

    def start(self):
        """Initial ``(low, high)``: the range (paper) or a bracket around the guess (guided)."""
        low, high = self.range
        if self.o.start_alpha is None:
            return low, high
        n = min(max(_load_of_alpha(self.o.start_alpha, self.d), low), high)
        factor = self.o.bracket_factor
        if self.test(n):
            while n < high:
                nxt = min(max(math.ceil(n * factor), n + 1), high)
                if not self.test(nxt):
                    return n, nxt
                n = nxt
            return high, high
        while n > low:
            nxt = max(min(math.floor(n / factor), n - 1), low)
            if self.test(nxt):
                return nxt, n
            n = nxt
        return low, low

    def bisect(self, low, high):
        while high / low > 1.0 + self.o.resolution and high - low > 1:
            n = int(0.5 * (low + high))
            if self.test(n):
                low = n
            else:
                high = n
        return low, high

    def finish(self, index) -> SeedCapacity:
        """Test an end of the range that was never tested, then summarise."""
        low, high = self.range
        if not self.passed and low not in self.failed:
            self.test(low)
        if not self.failed and high not in self.passed:
            self.test(high)
        best = max(self.passed, default=math.nan)
        above = min((n for n in self.failed if not n <= best), default=math.nan)
        if not self.passed:
            status, msg = "unbracketed", f"the bottom of the range N = {low} fails: capacity below it"
        elif not self.failed:
            status, msg = "unbracketed", f"the top of the range N = {high} passes: capacity above it"
        else:
            status, msg = "ok", f"N = {best} reaches accuracy {self.accuracy:g}, N = {above} does not"
        capacity = best if status == "ok" else math.nan
        alpha = capacity * math.log(capacity) / self.d**2 if status == "ok" else math.nan
        return SeedCapacity(index=index, capacity=float(capacity), low=float(best), high=float(above),
                            alpha=alpha, trials=tuple(self.trials), status=status,
                            converged=status == "ok", message=f"{msg} ({len(self.trials)} runs)")


def _load_of_alpha(alpha, d):
    """The integer nearest to the root ``N >= 1`` of ``N ln N = alpha d^2`` (Newton from above)."""
    return max(2, int(round(p_from_load(d, alpha, method="newton"))))


def _summary(d, accuracy, results, base, settings, seconds):
    caps = np.array([r.capacity for r in results], dtype=float)
    good = caps[np.isfinite(caps)]
    alphas = [r.alpha for r in results if r.status == "ok"]

    def stat(reduce):
        return float(reduce(good)) if good.size else math.nan

    std = float(np.std(good, ddof=1)) if good.size > 1 else math.nan
    status = "ok" if good.size == len(results) else "unbracketed"
    text = (f"Adam-CE capacity at accuracy {accuracy:g}, d = {d}: mean {stat(np.mean):.6g} over "
            f"{good.size} of {len(results)} seeds")
    if status != "ok":
        text += "; unbracketed: " + "; ".join(f"seed {r.index}: {r.message}" for r in results
                                               if r.status != "ok")
    return CECapacity(d=d, accuracy=accuracy, capacities=tuple(caps.tolist()), mean=stat(np.mean),
                      std=std, minimum=stat(np.min), maximum=stat(np.max),
                      alpha=float(np.mean(alphas)) if alphas else math.nan, per_seed=tuple(results),
                      seed=base, settings=settings.to_dict(), seconds=seconds, status=status,
                      converged=status == "ok", message=text)


def ce_capacity(d: int, *, accuracy: float = 0.99, seeds: int = 5, seed=None,
                settings: CEProtocol | None = None, progress: bool | None = None,
                trainer: Callable | None = None) -> CECapacity:
    """Capacity of Adam on the softmax cross-entropy, by bisection per seed.

    Parameters
    ----------
    d : int
        Dimension, ``>= 2`` (and large enough that the search range holds two loads).
    accuracy : float
        Target recall accuracy in ``(0, 1]`` (0.99: the paper's criterion; a run passes
        when its verified recall fraction is ``>= accuracy``).
    seeds : int
        Independent searches, ``>= 1``.
    seed : None, int, SeedSequence or Generator
        Base seed (``replica.common.seeds.resolve_seed``; ``None``: ``DEFAULT_SEED``);
        the run of seed number ``s`` at load ``N`` uses the instance seed
        :func:`trial_seed` ``(seed, s, N)`` (the Adam initialisation too).
    settings : CEProtocol, optional
        The protocol (default: the paper's settings).
    progress : bool or None
        tqdm bar of the runs on stderr (``None``: when stderr is a terminal).
    trainer : callable, optional
        ``trainer(d, N, instance_seed, settings, accuracy) -> recall fraction``
        replacing :func:`adam_trial` (tests use cheap stand-ins).

    Returns
    -------
    CECapacity

    Raises
    ------
    ValueError
        For ``d < 2``, an empty search range, ``accuracy`` outside ``(0, 1]``,
        ``seeds < 1`` or a bad seed.

    Notes
    -----
    See ``notes/ce_protocol.md``.
    """
    d = check_int(d, "d", low=2)
    accuracy = check_real(accuracy, "accuracy", low=0.0, high=1.0, low_open=True)
    seeds = check_int(seeds, "seeds", low=1)
    settings = CEProtocol() if settings is None else settings
    if not isinstance(settings, CEProtocol):
        raise ValueError(f"settings must be a CEProtocol, got {type(settings).__name__}")
    search_range(d, settings)
    base = resolve_seed(seed)
    trainer = adam_trial if trainer is None else trainer
    show = sys.stderr.isatty() if progress is None else bool(progress)
    from tqdm.auto import tqdm

    start = time.perf_counter()
    results = []
    with tqdm(desc=f"ce_capacity d={d}", unit="run", disable=not show, file=sys.stderr) as bar:
        for index in range(seeds):
            def run(n, index=index):
                bar.set_postfix(seed=index, N=n)
                fraction = trainer(d, n, trial_seed(base, index, n), settings, accuracy)
                bar.update(1)
                return fraction
            search = _Search(d, accuracy, settings, run)
            search.bisect(*search.start())
            results.append(search.finish(index))
    return _summary(d, accuracy, results, base, settings, time.perf_counter() - start)
