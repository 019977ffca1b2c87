"""Compile-once jq programs evaluated with gojq-compatible semantics and hard caps.

Upstream Karta evaluates every path with gojq. To read a definition the same way, this
module (docs/definition-format.md section 6):

* feeds jq a **key-sorted** serialization of the input, so ``.[]``, ``to_entries`` and
  ``keys`` walk objects in sorted key order as gojq does;
* returns **all** outputs; a missing field gives one ``null`` output;
* stops at :data:`MAX_RESULTS` outputs and raises (gojq fails when the count *reaches* the
  cap, so exactly 1000 outputs is already an error);
* refuses inputs larger than :data:`MAX_INPUT_BYTES`;
* turns every jq failure (the binding raises ``ValueError`` for all of them) into
  :class:`~workload_map.errors.JqCompileError` or :class:`~workload_map.errors.JqEvaluationError`
  carrying the expression.

The C binding holds the GIL and cannot be interrupted, so runaway programs are kept out
by :mod:`workload_map.jq.static` and by the trial at registration (:mod:`workload_map.jq.trial`, run on
the resolver workers); at request time
evaluation happens only when a workload changed (results are memoized per version).
"""

from __future__ import annotations

import json
from typing import Any, Callable, Iterable, Iterator

from workload_map.errors import JqCompileError, JqEvaluationError
from workload_map.jq.fastpath import FastPath, parse_fast_path
from workload_map.jq.kept import Kept
from workload_map.jq.static import forbidden_constructs, is_bounded

#: gojq's result cap per query; reaching it is an error.
MAX_RESULTS = 1000
#: Largest serialized input accepted (bytes of JSON text).
MAX_INPUT_BYTES = 8 * 1024 * 1024

PROGRAM_CACHE_SIZE = 8192
"""Most compiled programs kept (:func:`compile_program`)."""
PROGRAM_CACHE_CHARS = 2_000_000
"""Most expression characters whose compiled programs are kept, batches apart (each about
40 times the catalog's 52,000). A compiled program weighs about 70 bytes per character of
its expression, in C jq (4 KB for ``.a | tojson``, 0.3 MB for 4,500 characters) and in the
pure-Python path alike, so a count alone let 8,192 long expressions (validated, refused or
registered) pin gigabytes; these bound each cache to about 140 MB whatever it is given."""


_PROGRAMS = Kept(PROGRAM_CACHE_SIZE, PROGRAM_CACHE_CHARS)
_BATCHES = Kept(1024, PROGRAM_CACHE_CHARS)
_REFUSED = object()
"""Kept for a batch C jq refuses (not compiled again)."""


def clear_programs() -> None:
    """Drop every kept program and batch (benchmarks that time compiling)."""
    _PROGRAMS.clear()
    _BATCHES.clear()


class Document:
    """One JSON value prepared for many jq evaluations.

    Serializes the value once, with sorted keys (gojq order), the first time a program
    needs the text; fast-path programs read the Python value directly. :meth:`prefetch`
    evaluates several C-jq expressions in one pass (one parse of the text by jq instead
    of one per expression); later evaluations of those expressions read the results.

    Args:
        value: any JSON-compatible Python value (a Kubernetes object dict).
    """

    __slots__ = ("value", "_text", "_batched")

    def __init__(self, value: Any) -> None:
        self.value = value
        self._text: str | None = None
        self._batched: dict[str, list[Any]] | None = None

    def prefetch(self, expressions: Iterable[str]) -> None:
        """Evaluate the batchable ones of ``expressions`` together, keeping their outputs.

        Batchable: left to C jq (no fast path) and bounded
        (:func:`workload_map.jq.static.is_bounded`: a batch computes every output, so an
        endless generator whose first output was enough alone must not join one). The
        batch is one compiled program ``[(try [(e1)] catch null), ...]``; an expression
        that fails, or reaches :data:`MAX_RESULTS` outputs, is not kept and is evaluated
        alone later, so its outputs and error messages stay exactly those of its own
        program. Never raises.
        """
        done = self._batched or {}
        wanted = tuple(sorted({e for e in expressions if e not in done and _batchable(e)}))
        if len(wanted) < 2:
            return
        program = _batch_program(wanted)
        if program is None:
            return
        try:
            text = self.text
            if _tracer is not None:
                _tracer(" , ".join(wanted))
            results = program.input_text(text).first()
        except (JqEvaluationError, ValueError):
            return
        batched = self._batched = done
        for expression, outputs in zip(wanted, results):
            if isinstance(outputs, list) and len(outputs) < MAX_RESULTS:
                batched[expression] = outputs

    def batched(self, expression: str) -> list[Any] | None:
        """The outputs :meth:`prefetch` kept for ``expression`` (a new list), else None."""
        if self._batched is None:
            return None
        outputs = self._batched.get(expression)
        return None if outputs is None else list(outputs)

    @property
    def text(self) -> str:
        """Compact JSON text with sorted keys.

        Raises:
            JqEvaluationError: when the text exceeds :data:`MAX_INPUT_BYTES`.
        """
        if self._text is None:
            text = json.dumps(self.value, sort_keys=True, separators=(",", ":"), default=str)
            if ".0" in text:  # cheap pre-check: integral floats present (or a string with ".0")
                text = json.dumps(_integral(self.value), sort_keys=True, separators=(",", ":"), default=str)
            if len(text) > MAX_INPUT_BYTES:
                raise JqEvaluationError("<input>", f"input of {len(text)} bytes exceeds the limit of {MAX_INPUT_BYTES}")
            self._text = text
        return self._text


_tracer: Callable[[str], None] | None = None



def _batchable(expression: str) -> bool:
    try:
        program = compile_program(expression)
    except JqCompileError:
        return False
    return program.fast is None and is_bounded(expression)


def _batch_program(expressions: tuple[str, ...]) -> Any:
    """The compiled batch of ``expressions`` (kept, refusals too), or None when jq refuses it."""
    program = _BATCHES.get(expressions)
    if program is None:
        # a newline before each `)`: an expression may end in a `#` comment
        text = "[" + ", ".join(f"(try [({e}\n)] catch null)" for e in expressions) + "]"
        try:
            program = c_jq().compile(text)
        except ValueError:
            program = _REFUSED
        _BATCHES.put(expressions, program, len(text))
    return None if program is _REFUSED else program


def c_jq() -> Any:
    """The C jq binding (the ``jq`` package), imported on first use.

    A one-shot command whose expressions the pure-Python path answers never loads it
    (about 1 ms of a 0.08 s budget: docs/engine-speed.md, item 6).
    """
    import jq

    return jq


def set_evaluation_tracer(tracer: Callable[[str], None] | None) -> None:
    """Call ``tracer(expression)`` before every evaluation by the C jq library.

    Only the slow path is traced (the pure-Python fast path cannot loop). The resolver
    worker records the expression in shared memory with it, so when the parent ends a
    worker for exceeding its budget the error can name the expression that was running.
    ``None`` removes the tracer.
    """
    global _tracer
    _tracer = tracer


class JqProgram:
    """A compiled jq expression.

    Build with :func:`compile_program` (cached). Evaluation never raises anything but
    :class:`~workload_map.errors.JqEvaluationError`.

    An expression of the pure-Python subset (:mod:`workload_map.jq.fastpath`: navigation,
    pipes, ``select``/``map``/``any``, ``//``, comparisons, arithmetic, ``if``, string
    building, ``as``/``def``...) is not handed to the C library until an evaluation needs it
    (the pure path defers to jq on inputs it cannot answer exactly, errors included):
    compiling costs 1.5-3 ms a program, most of a one-shot command's budget, while such
    expressions are almost never evaluated by jq at all. The subset's parser refuses what
    jq refuses, so a syntax error is still reported when the expression is checked.

    Attributes:
        expression: the source text.
        fast: the pure-Python evaluator when the expression is in the subset, else None.

    Raises:
        JqCompileError: the expression does not parse or compile.
    """

    __slots__ = ("expression", "fast", "_program")

    def __init__(self, expression: str) -> None:
        self.expression = expression
        self.fast: FastPath | None = parse_fast_path(expression)
        self._program: Any = None
        if self.fast is None:
            self._program = self._compiled()

    def _compiled(self) -> Any:
        """The C program, compiled on first use.

        Raises:
            JqCompileError: jq refuses the expression.
        """
        if self._program is None:
            try:
                self._program = c_jq().compile(self.expression)
            except ValueError as exc:
                raise JqCompileError(self.expression, _clean(str(exc))) from None
        return self._program

    def all(self, doc: Document | Any) -> list[Any]:
        """Every output, in order.

        Args:
            doc: a :class:`Document` or a plain JSON value.

        Raises:
            JqEvaluationError: jq raised, the result cap was reached, or the input is too large.
        """
        doc = doc if isinstance(doc, Document) else Document(doc)
        if self.fast is not None:
            outputs = self.fast.evaluate(doc.value, MAX_RESULTS)
            if outputs is not None:
                if len(outputs) >= MAX_RESULTS:
                    raise self._cap_error()
                return outputs
        outputs = doc.batched(self.expression)
        if outputs is not None:
            return outputs
        return list(self._iterate(doc))

    def first(self, doc: Document | Any, default: Any = None) -> Any:
        """The first output, or ``default`` when there is none.

        Raises:
            JqEvaluationError: as :meth:`all`.
        """
        doc = doc if isinstance(doc, Document) else Document(doc)
        if self.fast is not None:
            outputs = self.fast.evaluate(doc.value, 1)
            if outputs is not None:
                return outputs[0] if outputs else default
        outputs = doc.batched(self.expression)
        if outputs is not None:
            return outputs[0] if outputs else default
        for value in self._iterate(doc):
            return value
        return default

    def _iterate(self, doc: Document) -> Iterator[Any]:
        try:
            text = doc.text
        except JqEvaluationError as exc:
            raise JqEvaluationError(self.expression, exc.reason) from None
        try:
            program = self._compiled()
        except JqCompileError as exc:
            raise JqEvaluationError(self.expression, f"failed to compile: {exc.reason}") from None
        if _tracer is not None:
            _tracer(self.expression)
        try:
            for count, value in enumerate(program.input_text(text), start=1):
                if count >= MAX_RESULTS:
                    raise self._cap_error()
                yield value
        except ValueError as exc:
            raise JqEvaluationError(self.expression, _clean(str(exc))) from None

    def _cap_error(self) -> JqEvaluationError:
        return JqEvaluationError(self.expression, f"query results exceed the allowed number {MAX_RESULTS}")


def compile_program(expression: str) -> JqProgram:
    """Compile ``expression`` once and return the kept program.

    Programs are kept within :data:`PROGRAM_CACHE_SIZE` and :data:`PROGRAM_CACHE_CHARS`
    (:class:`~workload_map.jq.kept.Kept`: the event loop and the dispatcher thread may both
    compile); a refused expression is not kept and raises again each time.

    Raises:
        JqCompileError: the expression does not parse or compile.
    """
    program: JqProgram | None = _PROGRAMS.get(expression)
    if program is None:
        program = JqProgram(expression)
        _PROGRAMS.put(expression, program, len(expression))
    return program


def stringify(value: Any) -> str:
    """Go ``%v`` rendering of a single jq result, as upstream compares ids and keys.

    Integral floats print without a fraction (``3.0`` -> ``"3"``), booleans as
    ``true``/``false``, null as ``<nil>``, strings raw, containers as compact JSON.
    """
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "<nil>"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (int, float)):
        return str(value)
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _integral(value: Any) -> Any:
    """Integral floats as ints, recursively.

    gojq decodes every number as float64 and prints ``2.0`` as ``2``, while C jq 1.7+ keeps
    the literal ``2.0`` (so ``tostring`` would differ).
    """
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _integral(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_integral(v) for v in value]
    return value


def _clean(message: str) -> str:
    """Strip the binding's trailing location noise, keep jq's own words."""
    return " ".join(message.split())


MAX_EXPRESSION_CHARS = 16_384
"""The longest jq expression a definition may hold (the catalog's longest field is 1,391)."""


def check_expression(expression: str) -> list[str]:
    """Parse ``expression`` with jq and run the forbidden-construct rules.

    Returns:
        Problems as reason strings: a parse failure first (``failed to parse: <err>``),
        then each forbidden construct. Empty when the expression is acceptable. An
        expression over :data:`MAX_EXPRESSION_CHARS` gets that one problem and is not compiled.
    """
    if len(expression) > MAX_EXPRESSION_CHARS:  # jq's compiler holds the GIL: 400 KB took 4 s, loop included
        return [f"failed validation: the expression is {len(expression):,} characters long; "
                f"at most {MAX_EXPRESSION_CHARS:,} are allowed"]
    problems: list[str] = []
    try:
        compile_program(expression)
    except JqCompileError as exc:
        problems.append(f"failed to parse: {exc.reason}")
    problems.extend(f"failed validation: {reason}" for reason in forbidden_constructs(expression))
    return problems
