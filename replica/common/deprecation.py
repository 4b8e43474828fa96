"""Old call styles of public functions, accepted for one release with a ``DeprecationWarning``."""

from __future__ import annotations

import functools
import warnings

__all__ = ["accepts_old_calls", "fold_keywords"]


def accepts_old_calls(translate):
    """Decorator: rewrite the calls that ``translate`` recognises as old style, with a warning.

    Parameters
    ----------
    translate : callable
        ``translate(args, kwargs)`` returns ``None`` for a call in the current style, or
        ``(args, kwargs, message)``: the same call in the current style and the warning
        to give.  The decorated function keeps its own signature (``inspect.signature``
        follows ``__wrapped__``).

    Returns
    -------
    callable
        The decorator.
    """

    def decorate(func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            new = translate(args, kwargs)
            if new is not None:
                args, kwargs, message = new
                warnings.warn(message, DeprecationWarning, stacklevel=2)
            return func(*args, **kwargs)

        return wrapper

    return decorate


def fold_keywords(kwargs, names, into, build):
    """Move the old keywords ``names`` of ``kwargs`` into the new keyword ``into``.

    Parameters
    ----------
    kwargs : dict
        The keyword arguments of the call (not changed).
    names : sequence of str
        The old keywords.
    into : str
        The new keyword.
    build : callable
        ``build(current, old)``: the value of ``into`` from its current value (``None``
        when not given) and the dict of old keywords present.

    Returns
    -------
    dict or None
        The new keyword arguments, or ``None`` when no old keyword is present.
    """
    old = {name: kwargs[name] for name in names if name in kwargs}
    if not old:
        return None
    new = {k: v for k, v in kwargs.items() if k not in old}
    new[into] = build(new.get(into), old)
    return new
