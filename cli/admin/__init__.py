"""`halfmq admin` verbs that talk to a running broker (transactions, topics, groups, DLQ, producers, cluster)."""
