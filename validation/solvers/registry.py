"""The registry of solvers (filled in below)."""

from __future__ import annotations

import importlib
from dataclasses import dataclass

__all__ = ["EntryPoint", "search_mode"]


@dataclass(frozen=True)
class EntryPoint:
    """A solver function named by its module and function name, imported when first needed."""

    module: str
    function: str

    def load(self):
        """The function (imports its module).

        Raises
        ------
        ImportError
            When the module is not available in this installation.
        """
        return getattr(importlib.import_module(self.module), self.function)


def search_mode(solver, options):
    """The search-mode entry point that ``options`` select for ``solver`` (None: the plain solve)."""
    if solver == "optimal" and (options.give_up or options.top_k > 1):
        name = "solve_give_up" if options.give_up else "solve_top_k"
        return EntryPoint("validation.solvers.modes", name).load()
    return None
