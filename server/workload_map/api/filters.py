"""Query parameters of the REST API: refused when unknown, repeated or empty; lists = any of.

Every REST endpoint names the parameters it accepts (:func:`refuse_unknown`, the one check
every handler runs first); any other one is a 400 naming it (a typo such as
``?phse=Running`` or an unsupported ``?namespace=`` on a namespaced path must not silently
list everything). A parameter given twice (``?limit=1&limit=2``) is a 400 naming it unless
it is one of the list filters below (the last value must not silently win). For the
workload lists (issue 29 item 7):

* ``phase``, ``kind``, ``namespace``: repeated (``?phase=A&phase=B``) or comma-separated
  values mean "any of" (as ``wmap get --phase``);
* ``kind`` takes what ``wmap get TYPE`` takes (kind, plural, ``kind.group``, definition
  name, catalog alias: ``workload_map.definitions.kinds``), so also the keys
  ``gpuSummary(groupBy: KIND)`` prints (``CronJob.batch``); a value naming no definition
  in force is a 400;
* ``labelSelector``: a Kubernetes label selector on the workload's root object
  (``workload_map.kube.selectors``); empty selects everything, as in Kubernetes.

An empty filter value (``?phase=``, ``?phase=Running,``, ``?node=``) is a 400 naming the
parameter: no phase, kind, namespace, definition, cluster or node is empty, and reading it
as "no filter" would list everything (omit the parameter for that).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable

from msgspec import Struct, field
from starlette.requests import Request

from workload_map.definitions.kinds import entries_for, prefer_builtin
from workload_map.definitions.phases import Phase
from workload_map.definitions.registry import DefinitionRegistry
from workload_map.errors import InvalidRequest
from workload_map.kube.selectors import Requirement, matches, parse_selector
from workload_map.resolution import WorkloadView

WORKLOAD_LIST_PARAMS = ("kind", "group", "phase", "definition", "cluster", "limit", "continue", "view",
                        "labelSelector", "namespace", "contains", "node")
"""Parameters of ``GET /api/v1/workloads`` (the namespaced list takes all but ``namespace``)."""

REPEATABLE = frozenset({"kind", "phase", "namespace"})
"""The parameters that may be given more than once (``?phase=A&phase=B``: any of)."""

NOT_EMPTY = frozenset({"kind", "phase", "namespace", "definition", "cluster", "node", "wait"})
"""Filters an empty value cannot mean (a missing parameter means "no filter")."""


def refuse_unknown(request: Request, accepted: Collection[str]) -> None:
    """Refuse a query parameter ``accepted`` does not name, a repeated or an empty one.

    Repeated: more than one value of a parameter outside :data:`REPEATABLE`. Empty: a blank
    value (or a blank item of a comma-separated list) of one of :data:`NOT_EMPTY`.

    Raises:
        InvalidRequest: names the first such parameter (unknown ones: with the accepted ones).
    """
    for name, value in request.query_params.multi_items():
        if name not in accepted:
            shown = ", ".join(sorted(accepted)) or "none"
            raise InvalidRequest(f"unknown query parameter {name!r}; this endpoint accepts: {shown}")
        if name not in REPEATABLE and len(request.query_params.getlist(name)) > 1:
            raise InvalidRequest(f"query parameter {name!r} is given more than once; give it once")
        if name in NOT_EMPTY and any(not item.strip() for item in (value.split(",") if name in REPEATABLE
                                                                    else (value,))):
            raise InvalidRequest(f"query parameter {name!r} has an empty value{f' in {value!r}' if value else ''}; "
                                 "omit the parameter for no filter")


def values(request: Request, name: str) -> list[str]:
    """Every value of a repeatable parameter, repeated or comma-separated.

    Blank ones are refused before (:func:`refuse_unknown`).
    """
    return [v.strip() for raw in request.query_params.getlist(name) for v in raw.split(",")]


def parse_phases(texts: Iterable[str], *, name: str) -> set[Phase]:
    """Phases by name, case-insensitive.

    Raises:
        InvalidRequest: a value that is not one of the nine phases.
    """
    by_name = {p.value.lower(): p for p in Phase}
    out = set()
    for text in texts:
        phase = by_name.get(text.lower())
        if phase is None:
            raise InvalidRequest(f"{name} must be one of {', '.join(p.value for p in Phase)}, got {text!r}")
        out.add(phase)
    return out


class ListFilter(Struct, frozen=True):
    """The "any of" filters a workload list applies on top of the service's own.

    Attributes:
        kinds: (group, kind) pairs, or None for any.
        phases: phases, or None for any (a workload matches with any of its phases).
        namespaces: namespaces, or None for any.
        selector: label requirements on the root object (all must hold).
    """

    kinds: frozenset[tuple[str, str]] | None = None
    phases: frozenset[Phase] | None = None
    namespaces: frozenset[str] | None = None
    selector: list[Requirement] = field(default_factory=list)

    def single_kind(self) -> tuple[str, str] | None:
        """The one (group, kind) filtered on, for the service's list cache."""
        return next(iter(self.kinds)) if self.kinds is not None and len(self.kinds) == 1 else None

    def keeps(self, view: WorkloadView, labels: Callable[[WorkloadView], dict[str, str] | None]) -> bool:
        """True when ``view`` passes every filter (``labels`` reads its root object's labels)."""
        return ((self.kinds is None or (view.group, view.kind) in self.kinds)
                and (self.phases is None or any(p in self.phases for p in view.phases))
                and (self.namespaces is None or view.namespace in self.namespaces)
                and (not self.selector or matches(self.selector, labels(view))))


def list_filter(request: Request, registry: DefinitionRegistry) -> ListFilter:
    """The filters of a workload list request.

    Raises:
        InvalidRequest: an unknown phase, a kind naming no definition, a bad selector, or
            ``namespace`` on the namespaced path.
    """
    if "namespace" in request.path_params and "namespace" in request.query_params:
        raise InvalidRequest("query parameter 'namespace' is for /api/v1/workloads; this path names the namespace")
    kinds: set[tuple[str, str]] | None = None
    for wanted in values(request, "kind"):
        entries = prefer_builtin(entries_for(registry, wanted))
        if not entries:
            raise InvalidRequest(f"kind {wanted!r} names no definition in force; give a kind, its plural, "
                                 "kind.group, a definition name or an alias (GET /api/v1/workload-types lists them)")
        kinds = (kinds or set()) | {(e.gvk.group, e.gvk.kind) for e in entries}
    phases = parse_phases(values(request, "phase"), name="phase")
    namespaces = frozenset(values(request, "namespace"))
    selector = parse_selector(request.query_params.get("labelSelector", ""), name="labelSelector")
    return ListFilter(frozenset(kinds) if kinds is not None else None, frozenset(phases) or None,
                      namespaces or None, selector)
