"""Kafka's idempotent producer on the Kafka front: per producer id and partition, the last five batches' sequences.

Kafka's clients number records per partition (a batch carries its first number, the records count on from it) and
keep up to five batches in flight; its broker remembers the last five batches of each producer id and partition
(``ProducerStateEntry``): a batch seen again is answered with its first answer (DUPLICATE_SEQUENCE_NUMBER is success
to the client), a batch that skips numbers is OUT_OF_ORDER_SEQUENCE_NUMBER, an older epoch is fenced. ``decide`` is
that rule, pure; ``ProducerSequences`` holds the entries, bounded (least recently used producer ids go first).

Interim (docs/decisions/048-kafka-wire-codec.md, "What the first handlers serve"): the ids are halfmq's (``new_producer_id``: durable, capped
per principal), but these entries live in the front's memory, not in the log as the SDK's send windows do (those
number sends, not records per partition), so after a restart a retry of a batch stored before the crash is stored
again: the client's next Produce names an id the entries no longer hold, and its batch is taken at the number it
carries (handlers.KafkaHandlers._numbered), as Kafka's brokers take a producer they hold no state of.
"""

from __future__ import annotations

import enum
from collections import OrderedDict, deque
from dataclasses import dataclass, field

KEPT_BATCHES = 5
"""Batches remembered per producer id and partition: Kafka's max.in.flight.requests.per.connection for idempotence."""


class SequenceVerdict(enum.Enum):
    STORE = "store"
    DUPLICATE = "duplicate"  # one of the kept batches again: its first answer
    OUT_OF_ORDER = "out of order"  # numbers skipped, or an old batch no longer kept
    FENCED = "fenced"  # an epoch older than the newest seen


@dataclass(frozen=True, slots=True)
class StoredBatch:
    first: int
    last: int
    base_offset: int


@dataclass
class PartitionEntry:
    epoch: int
    batches: deque[StoredBatch] = field(default_factory=lambda: deque(maxlen=KEPT_BATCHES))


def decide(entry: PartitionEntry | None, epoch: int, first: int, count: int) -> tuple[SequenceVerdict, StoredBatch | None]:
    """What a batch numbered ``first``..``first + count - 1`` under ``epoch`` gets, given what the partition holds."""
    if entry is None or epoch > entry.epoch:
        return (SequenceVerdict.STORE, None) if first == 0 or entry is None else (SequenceVerdict.OUT_OF_ORDER, None)
    if epoch < entry.epoch:
        return SequenceVerdict.FENCED, None
    for batch in entry.batches:
        if batch.first == first and batch.last == first + count - 1:
            return SequenceVerdict.DUPLICATE, batch
    expected = entry.batches[-1].last + 1 if entry.batches else 0
    return (SequenceVerdict.STORE, None) if first == expected else (SequenceVerdict.OUT_OF_ORDER, None)


class ProducerSequences:
    """The entries of at most ``max_producers`` producer ids (each with its partitions), least recently used out first."""

    def __init__(self, max_producers: int) -> None:
        self.max_producers = max_producers
        self._producers: OrderedDict[int, dict[tuple[str, int], PartitionEntry]] = OrderedDict()

    def known(self, producer_id: int) -> bool:
        return producer_id in self._producers

    def started(self, producer_id: int) -> None:
        """A producer id handed out by InitProducerId: its batches are taken from number 0."""
        self._producers[producer_id] = {}
        self._producers.move_to_end(producer_id)
        while len(self._producers) > self.max_producers:
            self._producers.popitem(last=False)

    def decide(self, producer_id: int, epoch: int, topic: str, partition: int, first: int, count: int) -> tuple[SequenceVerdict, StoredBatch | None]:
        partitions = self._producers[producer_id]
        self._producers.move_to_end(producer_id)
        return decide(partitions.get((topic, partition)), epoch, first, count)

    def stored(self, producer_id: int, epoch: int, topic: str, partition: int, first: int, count: int, base_offset: int) -> None:
        partitions = self._producers.get(producer_id)
        if partitions is None:
            return
        entry = partitions.get((topic, partition))
        if entry is None or epoch > entry.epoch:
            entry = partitions[(topic, partition)] = PartitionEntry(epoch)
        entry.batches.append(StoredBatch(first, first + count - 1, base_offset))

    def answered(self, producer_id: int, topic: str, partition: int, first: int, base_offset: int) -> None:
        """The offset of a batch stored before its flush ended (``stored`` with -1), for a repeat's answer."""
        for i, batch in enumerate(self._batches(producer_id, topic, partition)):
            if batch.first == first:
                self._producers[producer_id][(topic, partition)].batches[i] = StoredBatch(batch.first, batch.last, base_offset)

    def withdrawn(self, producer_id: int, topic: str, partition: int, first: int) -> None:
        """A batch ``stored`` ahead of its write whose write or flush failed: a retry of it is stored, not answered."""
        batches = self._batches(producer_id, topic, partition)
        for batch in [b for b in batches if b.first == first]:
            batches.remove(batch)

    def _batches(self, producer_id: int, topic: str, partition: int) -> deque[StoredBatch]:
        entry = self._producers.get(producer_id, {}).get((topic, partition))
        return entry.batches if entry is not None else deque()
