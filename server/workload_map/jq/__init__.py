"""JQ ENGINE: the only importer of the ``jq`` package.

Owns compilation (cached), evaluation with caps, gojq-compatible input ordering,
the pure-Python path for the jq the catalog uses (``fastpath``, ``parse``, ``values``,
``builtins``), static checks of forbidden constructs,
and the measurement of the registration trial (run as jobs of the resolver workers). Imports nothing from
``server`` but ``workload_map.errors``.
"""

from workload_map.jq.engine import (
    MAX_INPUT_BYTES,
    MAX_RESULTS,
    Document,
    JqProgram,
    check_expression,
    compile_program,
    set_evaluation_tracer,
    stringify,
)

__all__ = [
    "MAX_INPUT_BYTES",
    "MAX_RESULTS",
    "Document",
    "JqProgram",
    "check_expression",
    "compile_program",
    "set_evaluation_tracer",
    "stringify",
]
