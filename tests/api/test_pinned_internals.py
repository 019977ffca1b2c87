"""The strawberry and uvicorn internals we override keep the shape we were written against (issue 27 item 2).

``workload_map.api.graphql.GraphQLApp`` overrides methods of strawberry's ASGI view, four of
which are not documented extension points (``parse_http_body``, ``execute_operation``,
``execute_single``, ``parse_json``; strawberry's "ASGI" integration page documents
``get_context``, ``get_root_value``, ``process_result``, ``encode_json``, ``decode_json``,
``on_ws_connect`` and ``render_graphql_ide``), and ``workload_map.api.connections`` subclasses
uvicorn's private ``H11Protocol``. So pyproject.toml pins both to the tested minor
(``strawberry-graphql>=0.341.2,<0.342``, ``uvicorn>=0.54,<0.55``), and this module fails,
naming the member, when a release changes what we rely on: the owner class, the parameter
names and order, sync versus async, and the call sites that make strawberry call our
overrides at all. Moving the pin: run this module and the API tests on the new release,
adjust the overrides, then change the pin and the recorded shapes together.
"""

from __future__ import annotations

import inspect
import re
import tomllib
from importlib.metadata import version

import pytest
from strawberry.asgi import GraphQL
from strawberry.http.async_base_view import AsyncBaseHTTPView
from strawberry.http.base import BaseView
from uvicorn.protocols.http.h11_impl import H11Protocol, RequestResponseCycle

from workload_map.api.connections import GuardedH11Protocol
from workload_map.api.graphql import GraphQLApp
from workload_map.paths import REPO_ROOT

# method -> (class of strawberry's that defines it, parameters, async?)
STRAWBERRY = {
    "parse_http_body": (AsyncBaseHTTPView, ["self", "request"], True),
    "execute_operation": (AsyncBaseHTTPView, ["self", "request", "request_adapter", "request_data", "context",
                                              "root_value", "sub_response"], True),
    "execute_single": (AsyncBaseHTTPView, ["self", "request", "request_adapter", "sub_response", "context",
                                           "root_value", "request_data"], True),
    "parse_json": (BaseView, ["self", "data"], False),
    "process_result": (AsyncBaseHTTPView, ["self", "request", "result"], True),
    "encode_json": (BaseView, ["self", "data"], False),
    "get_context": (GraphQL, ["self", "request", "response"], True),
    "on_ws_connect": (AsyncBaseHTTPView, ["self", "context"], True),
    "__call__": (GraphQL, ["self", "scope", "receive", "send"], True),
}

# caller in strawberry -> the overridden methods it must call (so our overrides run)
CALL_SITES = {
    (AsyncBaseHTTPView, "run"): ["self.parse_http_body(", "self.execute_operation(", "self.process_result("],
    (GraphQL, "create_response"): ["self.encode_json("],
    (AsyncBaseHTTPView, "execute_operation"): ["self.execute_single("],
    (AsyncBaseHTTPView, "parse_http_body"): ["self.parse_json("],
}

UVICORN = {"connection_made": ["self", "transport"], "data_received": ["self", "data"],
           "connection_lost": ["self", "exc"]}


def _pins() -> dict[str, str]:
    deps = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    return {re.split(r"[<>=]", d, maxsplit=1)[0]: d for d in deps}


def _owner(cls: type, name: str) -> type:
    return next(c for c in cls.__mro__ if name in c.__dict__)


def test_the_pins_admit_only_the_tested_minor_and_it_is_installed() -> None:
    pins = _pins()
    assert pins["strawberry-graphql"] == "strawberry-graphql>=0.341.2,<0.342"
    assert pins["uvicorn"] == "uvicorn>=0.54,<0.55"
    assert version("strawberry-graphql").startswith("0.341.")
    assert version("uvicorn").startswith("0.54.")


def test_every_strawberry_method_we_override_is_listed_here() -> None:
    ours = {name for name, value in vars(GraphQLApp).items()
            if callable(value) and not isinstance(value, type) and any(name in vars(c) for c in GraphQL.__mro__)}
    assert ours == set(STRAWBERRY), "a new override of a strawberry method: record its shape in STRAWBERRY"


def test_the_transport_ws_handler_override_still_fits() -> None:
    # GraphQLApp.graphql_transport_ws_handler_class = OwnErrorsHandler, which overrides one private
    # static method of strawberry's handler (issue 29: a bad operation ends only itself)
    from strawberry.subscriptions.protocols.graphql_transport_ws.handlers import BaseGraphQLTransportWSHandler

    from workload_map.api.graphql import OwnErrorsHandler

    assert any("graphql_transport_ws_handler_class" in vars(c) for c in GraphQL.__mro__), \
        "strawberry renamed the handler class attribute"
    assert GraphQLApp.graphql_transport_ws_handler_class is OwnErrorsHandler
    theirs = inspect.getattr_static(BaseGraphQLTransportWSHandler, "_get_pre_execution_close_reason")
    assert isinstance(theirs, staticmethod), "strawberry changed _get_pre_execution_close_reason"
    assert list(inspect.signature(theirs.__func__).parameters) == ["error"]
    assert "self._get_pre_execution_close_reason(" in inspect.getsource(BaseGraphQLTransportWSHandler)


@pytest.mark.parametrize("name", sorted(STRAWBERRY))
def test_strawberry_method_shape(name: str) -> None:
    owner, params, is_async = STRAWBERRY[name]
    theirs = getattr(GraphQL, name)
    assert _owner(GraphQL, name) is owner, f"strawberry moved {name} from {owner.__qualname__}"
    assert list(inspect.signature(theirs).parameters) == params, f"strawberry changed the parameters of {name}"
    assert inspect.iscoroutinefunction(theirs) is is_async, f"strawberry changed {name} between sync and async"
    ours = getattr(GraphQLApp, name)
    assert list(inspect.signature(ours).parameters) == params, f"our {name} no longer matches strawberry's"


def test_graphql_ide_html_is_still_a_property_of_the_base_view() -> None:
    assert isinstance(BaseView.__dict__["graphql_ide_html"], property)
    assert "self.graphql_ide_html" in inspect.getsource(GraphQL.render_graphql_ide)


@pytest.mark.parametrize(("caller", "calls"), list(CALL_SITES.items()),
                         ids=[f"{c.__name__}.{m}" for c, m in CALL_SITES])
def test_strawberry_still_calls_our_overrides(caller: tuple[type, str], calls: list[str]) -> None:
    cls, method = caller
    source = inspect.getsource(getattr(cls, method))
    missing = [call for call in calls if call not in source]
    assert missing == [], f"{cls.__qualname__}.{method} no longer calls {missing}: our overrides would not run"


@pytest.mark.parametrize("name", sorted(UVICORN))
def test_uvicorn_h11_protocol_method_shape(name: str) -> None:
    assert name in vars(H11Protocol), f"uvicorn's H11Protocol no longer defines {name}"
    assert list(inspect.signature(getattr(H11Protocol, name)).parameters) == UVICORN[name]
    assert not inspect.iscoroutinefunction(getattr(H11Protocol, name))
    assert name in vars(GuardedH11Protocol)


def test_uvicorn_h11_protocol_still_has_the_attributes_the_guard_reads() -> None:
    # GuardedH11Protocol reads self.connections (the server's open connections), self.cycle
    # and its response_complete (between requests), self.loop, self.transport and self.client
    init = inspect.getsource(H11Protocol.__init__)
    for attribute in ("connections", "cycle", "loop"):
        assert re.search(rf"self\.{attribute}(: [^=]+)? = ", init), f"H11Protocol.__init__ no longer sets {attribute}"
    made = inspect.getsource(H11Protocol.connection_made)
    assert "self.connections.add(self)" in made, "H11Protocol no longer registers itself in self.connections"
    assert "self.transport = transport" in made and "self.client =" in made
    assert "self.response_complete =" in inspect.getsource(RequestResponseCycle.__init__)


def test_uvicorn_response_headers_still_come_from_the_cycles_default_headers() -> None:
    # a probe slot's one response says connection: close by extending cycle.default_headers
    # after H11Protocol.data_received created the cycle; send() must read that attribute and
    # close the connection once h11 says it must (a response with connection: close)
    assert "self.default_headers = default_headers" in inspect.getsource(RequestResponseCycle.__init__)
    send = inspect.getsource(RequestResponseCycle.send)
    assert "headers = self.default_headers + " in send
    assert "self.conn.our_state is h11.MUST_CLOSE" in send and "self.transport.close()" in send
    handle = inspect.getsource(H11Protocol.handle_events)
    assert "self.loop.create_task(self.cycle.run_asgi(app))" in handle, "the cycle's task no longer starts later"
