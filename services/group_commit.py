"""The services' group commit lives in the SDK now (``halfmq.client.group_commit``): the barrier and the inbox batch with it too."""

from halfmq.client.group_commit import GroupCommit

__all__ = ["GroupCommit"]
