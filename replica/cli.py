"""Command line: ``replica <command> ...``.

Each sub-command lives in its own module ``replica._cmd_<name>`` that defines
``register(subparsers)``: it adds its parser and sets ``func`` (a callable
taking the parsed arguments and returning an exit status).  Add a module to
``COMMAND_MODULES`` to add a command.
"""

from __future__ import annotations

import sys

from .common.cliutil import dispatch

COMMAND_MODULES = [
    "replica._cmd_table",
    "replica._cmd_capacity",
    "replica._cmd_saddle",
]


def main(argv=None) -> int:
    return dispatch("replica", "Replica theory of linear associative memories.", COMMAND_MODULES, argv)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
