"""Internal helpers shared by ``replica`` and ``validation``.

These modules are the documented internal interface between the two packages
(``validation`` may import them; neither imports the other's underscore modules):

* :mod:`replica.common.checks` -- argument checks that raise one-line ``ValueError``.
* :mod:`replica.common.results` -- the result contract (``status``, ``converged``,
  ``message``, JSON-safe ``to_dict``) that every public result type follows.
* :mod:`replica.common.seeds` -- the one seed policy of the package.
* :mod:`replica.common.ensembles` -- the names of the embedding ensembles.
* :mod:`replica.common.roots` -- the bracketed root finder of every capacity search.
* :mod:`replica.common.loads` -- the load ``p ln p / d^2`` and its inversions.
* :mod:`replica.common.deprecation` -- old call styles of public functions, accepted for
  one release with a ``DeprecationWarning``.
* :mod:`replica.common.cliutil` -- the command-line plumbing (one-line errors, exit 2,
  ``--format table|csv|json`` rendering).

They are not part of the stable user API: names may change between minor versions.
"""
