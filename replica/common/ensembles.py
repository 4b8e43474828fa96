"""The embedding ensembles of the package, in one place.

``"gaussian"``: i.i.d. N(0, 1/d) embedding coordinates (N(0, 1) fields);
``"sphere"``: unit-norm embeddings (the exact projection law of
``replica.optimal.sphere.ProjectionLaw``, ``notes/sphere_ensemble.md``).  The theory
(``replica.capacity(ensemble=...)``, ``replica.hebbian_capacity``,
``replica.accuracy_capacity``) and the simulations accept the same names.
"""

from __future__ import annotations

from .checks import check_choice

__all__ = ["ENSEMBLES", "check_ensemble"]

ENSEMBLES = ("gaussian", "sphere")
"""Names of the embedding ensembles, in the order the command lines list them."""


def check_ensemble(ensemble, name: str = "ensemble") -> str:
    """Return ``ensemble`` if it is one of :data:`ENSEMBLES`, else raise a one-line ``ValueError``."""
    return check_choice(ensemble, name, ENSEMBLES)
