"""Timed and delayed messages (RocketMQ 5's timer messages): routing at visibility, the index of pending timers,
and the leader's release loop. Builds on the store; knows nothing of the fronts, the use cases or the protocols."""
