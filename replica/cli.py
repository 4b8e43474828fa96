"""Command line ``replica <command> ...``: one module ``replica._cmd_<name>`` per sub-command.

Each module's ``register(subparsers)`` adds its parser with
:func:`replica.common.cliutil.add_command`; list a module in ``COMMAND_MODULES`` to add
a command.
"""

from __future__ import annotations

import sys

from .common.cliutil import dispatch

COMMAND_MODULES = ["replica._cmd_table", "replica._cmd_capacity", "replica._cmd_saddle"]


def main(argv=None) -> int:
    return dispatch("replica", "Replica theory of linear associative memories.", COMMAND_MODULES, argv)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
