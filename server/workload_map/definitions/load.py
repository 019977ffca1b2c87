"""Load definitions from YAML/JSON text or decoded documents, fully validated.

``load_definition`` is the one entry point every caller uses (catalog, REST, GraphQL,
CLI, Karta custom resources): parse, then validate, then raise
:class:`~workload_map.errors.InvalidDefinition` with *every* problem, or return the model.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from workload_map.definitions.model import Definition
from workload_map.definitions.parse import parse_definition
from workload_map.definitions.validate import validate_definition
from workload_map.errors import InvalidDefinition, InvalidRequest, Problem

#: Largest definition text accepted, bytes.
MAX_DEFINITION_BYTES = 1024 * 1024

#: Most values a document may hold once YAML aliases and merge keys are expanded (every
#: later JSON encoding expands them: "billion laughs"). The catalog's largest definition
#: holds about 2,000.
MAX_EXPANDED_VALUES = 250_000

#: libyaml's loader (about 7x faster than the pure-Python one on the catalog); PyYAML built
#: without libyaml falls back to ``SafeLoader``. Both compose the same nodes, with marks.
YamlLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class DuplicateKey(ValueError):
    """A JSON object holds the same key twice (raised by :func:`unique_pairs`)."""


def unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` refusing duplicate keys.

    JSON allows them; Kubernetes' strict decoding does not, and "the last one wins" hides
    mistakes.
    """
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKey(key)
        out[key] = value
    return out


def _key_text(node: yaml.Node) -> str:
    return str(node.value) if isinstance(node, yaml.ScalarNode) else f"<{node.tag}>"


def duplicate_key_problem(root: yaml.Node) -> str | None:
    """``<field path>: duplicate key (lines A and B) ...`` for the first key held twice, or None.

    The first key that a mapping in ``root`` holds twice. Each node is visited once
    (aliases share nodes), so this is linear in the document even with anchors.
    """
    seen: set[int] = set()
    stack: list[tuple[yaml.Node, str]] = [(root, "")]
    while stack:
        node, path = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            lines: dict[tuple[str, str], int] = {}
            for key, value in node.value:
                ident = (key.tag, _key_text(key))
                at = f"{path}.{ident[1]}" if path else ident[1]
                if ident in lines:
                    return (f"{at}: duplicate key (lines {lines[ident]} and {key.start_mark.line + 1}); each key "
                            "may appear once in a mapping")
                lines[ident] = key.start_mark.line + 1
                stack.append((value, at))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((item, f"{path}[{index}]") for index, item in enumerate(node.value))
    return None


def check_expansion(text: str, *, limit: int = MAX_EXPANDED_VALUES) -> None:
    """Refuse YAML text that holds more than ``limit`` values once aliases are expanded.

    Counted on libyaml's event stream (no nodes, no tag resolution, stopping at the limit):
    each scalar is one value, a collection one plus its contents, an alias (a merge key's
    value is one) the count of its anchor. Linear in the text, whatever it expands to.
    Syntax errors are left to the loader, which reports them with their line.

    Raises:
        InvalidRequest: more than ``limit`` values, or an alias inside its own anchor (a
            recursive structure never ends once encoded as JSON).
    """
    anchored: dict[str, int] = {}
    open_counts: list[tuple[str | None, int]] = []
    total = 0
    try:
        for event in yaml.parse(text, Loader=YamlLoader):
            if isinstance(event, yaml.AliasEvent):
                if event.anchor not in anchored:
                    if any(anchor == event.anchor for anchor, _ in open_counts):
                        raise InvalidRequest("the document holds an alias inside its own anchor (a recursive "
                                             "structure); write it without anchors and aliases")
                    return  # an undefined alias: the loader reports it
                total += anchored[event.anchor]
            elif isinstance(event, yaml.ScalarEvent):
                total += 1
                if event.anchor:
                    anchored[event.anchor] = 1
            elif isinstance(event, yaml.CollectionStartEvent):
                total += 1
                open_counts.append((event.anchor, total - 1))
            elif isinstance(event, yaml.CollectionEndEvent):
                anchor, before = open_counts.pop()
                if anchor:
                    anchored[anchor] = total - before
            if total > limit:
                raise InvalidRequest(f"the document expands to more than {limit} values (YAML aliases or merge "
                                     "keys); write it without anchors and aliases")
    except yaml.YAMLError:
        return


def _yaml_documents(text: str, source: str) -> list[Any]:
    """Every non-empty YAML document of ``text`` (safe tags only), duplicate keys refused.

    Text with an alias is first counted as expanded (:func:`check_expansion`); nodes are
    composed by :data:`YamlLoader` (libyaml when present), checked for duplicate keys, then
    constructed.

    Raises:
        yaml.YAMLError: syntax errors.
        InvalidRequest: a mapping holds a key twice (message gives the field path), or the
            document expands too far.
    """
    if "*" in text:  # without an alias nothing expands
        check_expansion(text)
    loader = YamlLoader(text)
    try:
        docs = []
        while loader.check_node():
            node = loader.get_node()
            problem = duplicate_key_problem(node) if node is not None else None
            if problem:
                raise InvalidRequest(problem if source == "<input>" else f"{source}: {problem}")
            doc = loader.construct_document(node) if node is not None else None
            if doc is not None:
                docs.append(doc)
        return docs
    finally:
        loader.dispose()


def load_documents(text: str | bytes, *, source: str = "<input>") -> list[Any]:
    """Decode JSON or (multi-document) YAML text into documents, skipping empty ones.

    Duplicate keys in a mapping are refused with their field path (JSON text with one is
    re-read as YAML, which knows the path).

    Raises:
        InvalidRequest: the text is not valid YAML/JSON (message names ``source``, line),
            or a mapping holds a key twice.
    """
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            value = json.loads(text, object_pairs_hook=unique_pairs)
            return value if isinstance(value, list) else [value]
        except ValueError:
            pass  # YAML is a superset of JSON for our purposes: let YAML report the error
    try:
        return _yaml_documents(text, source)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1} column {mark.column + 1}" if mark else ""
        reason = getattr(exc, "problem", None) or str(exc)
        raise InvalidRequest(f"{source}:{where}: not valid YAML or JSON: {reason}") from None


def decode_definition(text: str | bytes) -> Any:
    """The one document of a definition's text, size and expansion checked before use.

    Raises:
        InvalidRequest: over :data:`MAX_DEFINITION_BYTES`, undecodable, expanding beyond
            :data:`MAX_EXPANDED_VALUES`, or not exactly one document.
    """
    if len(text) > MAX_DEFINITION_BYTES:
        raise InvalidRequest(f"definition of {len(text)} bytes exceeds the limit of {MAX_DEFINITION_BYTES}")
    docs = load_documents(text)
    if len(docs) != 1:
        raise InvalidRequest(f"expected exactly one definition document, got {len(docs)}")
    return docs[0]


def check_definition(doc: Any, *, check_jq: bool = True) -> tuple[Definition | None, list[Problem]]:
    """Parse and validate ``doc``; return the model (or None) and all problems.

    ``check_jq=False``: every rule but the jq one (see ``validate_definition``).
    """
    problems: list[Problem] = []
    definition = parse_definition(doc, problems)
    if definition is not None:
        problems += validate_definition(definition, check_jq=check_jq)
    return (definition if not problems else None), problems


def load_definition(doc: Any, *, check_jq: bool = True) -> Definition:
    """A validated :class:`Definition` from a decoded document or YAML/JSON text.

    ``check_jq=False`` defers the jq rule (compile and forbidden constructs) to the caller:
    only the built-in catalog does so, checking a kind's expressions before first use.

    Raises:
        InvalidRequest: text that does not decode, holds no document or more than one.
        InvalidDefinition: every validation problem, each with its field path.
    """
    if isinstance(doc, (str, bytes)):
        doc = decode_definition(doc)
    definition, problems = check_definition(doc, check_jq=check_jq)
    if definition is None:
        name = doc.get("metadata", {}).get("name", "") if isinstance(doc, dict) and isinstance(
            doc.get("metadata"), dict) else ""
        raise InvalidDefinition(problems, name=str(name))
    return definition
