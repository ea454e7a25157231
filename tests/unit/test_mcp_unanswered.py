"""``caseboard mcp`` over stdio waits, at the end of its input, for the requests read and not yet answered
(``caseboard/mcp_server/stdio.py``). JSON-RPC 2.0 ids are numbers or strings, so ``3`` and ``"3"`` are two
requests: answering one leaves the other awaited."""

from __future__ import annotations

from mcp.shared.message import SessionMessage
from mcp_types import JSONRPCNotification, JSONRPCRequest, JSONRPCResponse

from caseboard.mcp_server.stdio import Unanswered


def request(request_id: int | str) -> SessionMessage:
    return SessionMessage(JSONRPCRequest(jsonrpc="2.0", id=request_id, method="tools/list"))


def answer(request_id: int | str) -> SessionMessage:
    return SessionMessage(JSONRPCResponse(jsonrpc="2.0", id=request_id, result={}))


def test_a_number_and_the_same_digits_as_text_are_two_requests() -> None:
    waiting = Unanswered()
    waiting.read(request(3))
    waiting.read(request("3"))
    waiting.written(answer(3))
    assert waiting.ids == {"3"}
    waiting.written(answer("3"))
    assert waiting.ids == set()


def test_a_cancelled_request_needs_no_answer_and_a_cancellation_naming_anything_is_ignored() -> None:
    waiting = Unanswered()
    waiting.read(request(7))
    waiting.read(request("x"))
    for named in ([7], {"id": 7}, None, "7"):
        cancel = JSONRPCNotification(jsonrpc="2.0", method="notifications/cancelled", params={"requestId": named})
        waiting.read(SessionMessage(cancel))
    assert waiting.ids == {7, "x"}
    waiting.read(
        SessionMessage(JSONRPCNotification(jsonrpc="2.0", method="notifications/cancelled", params={"requestId": 7}))
    )
    assert waiting.ids == {"x"}
