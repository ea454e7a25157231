"""The reusable knowledge store: verified findings promoted explicitly, kept apart from the workspaces and the
ledger, written from the ledger, never read by a workspace's replay (docs/knowledge.md, docs/adr/0120-0124)."""

from caseboard.knowledge.store import Entry, KnowledgeStore, open_knowledge_store
from caseboard.knowledge.writer import KnowledgeWriter, Unbacked, audit, deliver, entry_id, rebuild

__all__ = [
    "Entry",
    "KnowledgeStore",
    "KnowledgeWriter",
    "Unbacked",
    "audit",
    "deliver",
    "entry_id",
    "open_knowledge_store",
    "rebuild",
]
