"""The console entry (``wmap``, ``kubectl-wmap``, ``python -m workload_map``): :func:`run`.

It runs before anything else of the command line is imported, so that two start-up costs
of a one-shot command can be avoided (docs/engine-speed.md, "The one-shot CLI's start-up";
measured on ``wmap describe -f`` of one small file, 90 ms in all):

- **The cyclic garbage collector is off during start-up.** Importing the command line and
  building the catalog allocate tens of thousands of long-lived objects (modules,
  functions, classes, compiled definitions) and no cyclic garbage, yet every 700
  allocations a collection walks the young ones and every tenth of those all of them
  (about 5 ms). :func:`workload_map.cli.collector.resume` turns it on again as a command
  starts its work; ``describe -f`` of a small input never needs it (:mod:`~workload_map.cli.collector`).
- **msgspec is imported without typing_extensions** (about 5 ms, most of it the ``inspect``
  module typing_extensions imports). msgspec's ``_utils`` tries typing_extensions for
  ``get_type_hints``/``Required``/``NotRequired`` and falls back to :mod:`typing`, which on
  Python 3.11+ (``requires-python``) has them all with the same meaning. They only matter
  when msgspec decodes into a typed schema, which this package never asks for (its
  decoders are untyped or :class:`msgspec.Raw`). typing_extensions itself stays importable
  for everyone else (strawberry imports it when ``wmap serve`` starts the API).
"""

from __future__ import annotations

import gc
import sys
from typing import NoReturn


def run() -> NoReturn:
    """Start up (see the module docstring), then :func:`workload_map.cli.main.run`."""
    gc.disable()
    import_msgspec()
    from workload_map.cli.main import run as run_command

    run_command()


def import_msgspec() -> None:
    """Import msgspec with typing_extensions hidden (see the module docstring), once.

    Nothing is hidden when either is already imported. A msgspec that cannot do without
    typing_extensions (an ``ImportError`` while it is hidden) is imported the plain way.
    """
    if "msgspec" in sys.modules or "typing_extensions" in sys.modules:
        return
    sys.modules["typing_extensions"] = None  # type: ignore[assignment]  # ``import`` raises ImportError
    try:
        import msgspec  # noqa: F401
    except ImportError:
        for name in [n for n in sys.modules if n == "msgspec" or n.startswith("msgspec.")]:
            del sys.modules[name]
    finally:
        del sys.modules["typing_extensions"]
    import msgspec  # noqa: F401, F811  # a no-op when the first import succeeded
