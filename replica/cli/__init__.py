"""Command line ``replica <command> ...``: one module ``replica.cli.<name>`` per sub-command.

Each module's ``register(subparsers)`` adds its parser with
:func:`replica.common.cliutil.add_command`; list a module in ``COMMAND_MODULES`` to add
a command.
"""

from __future__ import annotations

import sys

from ..common.cliutil import dispatch

__all__ = ["main", "COMMAND_MODULES"]

COMMAND_MODULES = ["replica.cli.table", "replica.cli.capacity", "replica.cli.saddle", "replica.cli.models"]


def main(argv=None) -> int:
    """Run ``replica`` with ``argv`` (default ``sys.argv[1:]``); returns the exit status."""
    return dispatch("replica", "Replica theory of linear associative memories.", COMMAND_MODULES, argv)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
