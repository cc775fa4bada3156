"""The services' group commit lives in the SDK now (``halfmq.client.database_writes.DatabaseWriteBatcher``): the barrier and the inbox batch with it too."""

from halfmq.client.database_writes import DatabaseWriteBatcher as GroupCommit

__all__ = ["GroupCommit"]
