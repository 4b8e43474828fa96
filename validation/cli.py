"""Command line: ``validation <command> ...``.

Each sub-command lives in its own module ``validation._cmd_<name>`` that defines
``register(subparsers)``: it adds its parser and sets ``func`` (a callable
taking the parsed arguments and returning an exit status).  Add a module to
``COMMAND_MODULES`` to add a command.
"""

from __future__ import annotations

import sys

from replica.common.cliutil import dispatch

COMMAND_MODULES = [
    "validation._cmd_solve",
    "validation._cmd_capacity",
    "validation._cmd_reproduce",
    "validation._cmd_export",
    "validation._cmd_compare",
]


def main(argv=None) -> int:
    return dispatch("validation", "Simulations of linear associative memories.", COMMAND_MODULES, argv)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
