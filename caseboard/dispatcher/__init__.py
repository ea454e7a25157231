"""The dispatcher: follows the ledger's notification log and hands selective notifications to dramatiq."""

from caseboard.dispatcher.follower import DispatchConfig, Dispatcher
from caseboard.dispatcher.notification import Notification
from caseboard.dispatcher.outbox import open_outbox
from caseboard.dispatcher.route import coalesce, route
from caseboard.dispatcher.store import DispatchStore

__all__ = [
    "DispatchConfig",
    "DispatchStore",
    "Dispatcher",
    "Notification",
    "coalesce",
    "open_outbox",
    "route",
]
