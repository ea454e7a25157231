"""The HTTP face of caseboard: FastAPI routes over the coordinator, the ledger and the projections."""

from caseboard.api.server import create_app

__all__ = ["create_app"]
