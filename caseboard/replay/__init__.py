"""Replay, export, import, verification and comparison of recorded incidents.

Everything here reads the ledger (or an exported file) and folds it with a named reducer. Nothing here
writes to the ledger except ``importer``, nothing notifies, nothing calls a model or a network service.
"""
