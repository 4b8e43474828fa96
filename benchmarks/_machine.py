"""The machine a benchmark ran on, as the benchmarks' records name it."""

from __future__ import annotations

import llvmlite.binding
import numba


def cpu_target() -> str:
    """The CPU numba compiles for and its widest vector ISA, e.g. ``znver4 (AVX-512)``:
    ``NUMBA_CPU_NAME`` / ``NUMBA_CPU_FEATURES`` when set, else the host's.  Timings of
    different targets are not comparable one to one."""
    name = numba.config.CPU_NAME or llvmlite.binding.get_host_cpu_name()
    features = numba.config.CPU_FEATURES
    if features is None:
        features = llvmlite.binding.get_host_cpu_features().flatten()
    isa = "AVX-512" if "+avx512f" in features else "AVX2" if "+avx2" in features else "no AVX2"
    return f"{name} ({isa})"
