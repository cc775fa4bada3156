"""Kafka's idempotent batches per producer id and partition: stored once, in order, the newest epoch only."""

from __future__ import annotations

from halfmq.broker.kafka_front.producer_sequences import KEPT_BATCHES, ProducerSequences, SequenceVerdict


def test_batches_in_order_are_stored_and_a_batch_seen_again_gets_its_first_offset() -> None:
    seqs = ProducerSequences(max_producers=10)
    seqs.started(7)
    assert seqs.decide(7, 0, "t", 0, 0, 3)[0] is SequenceVerdict.STORE
    seqs.stored(7, 0, "t", 0, 0, 3, base_offset=100)
    assert seqs.decide(7, 0, "t", 0, 3, 2)[0] is SequenceVerdict.STORE
    seqs.stored(7, 0, "t", 0, 3, 2, base_offset=103)
    verdict, earlier = seqs.decide(7, 0, "t", 0, 0, 3)
    assert verdict is SequenceVerdict.DUPLICATE and earlier is not None and earlier.base_offset == 100


def test_a_gap_is_out_of_order_and_each_partition_counts_on_its_own() -> None:
    seqs = ProducerSequences(max_producers=10)
    seqs.started(7)
    seqs.stored(7, 0, "t", 0, 0, 3, base_offset=0)
    assert seqs.decide(7, 0, "t", 0, 5, 1)[0] is SequenceVerdict.OUT_OF_ORDER
    assert seqs.decide(7, 0, "t", 1, 0, 1)[0] is SequenceVerdict.STORE


def test_an_older_epoch_is_fenced_and_a_newer_one_starts_from_zero() -> None:
    seqs = ProducerSequences(max_producers=10)
    seqs.started(7)
    seqs.stored(7, 1, "t", 0, 0, 1, base_offset=0)
    assert seqs.decide(7, 0, "t", 0, 1, 1)[0] is SequenceVerdict.FENCED
    assert seqs.decide(7, 2, "t", 0, 0, 1)[0] is SequenceVerdict.STORE
    assert seqs.decide(7, 2, "t", 0, 4, 1)[0] is SequenceVerdict.OUT_OF_ORDER


def test_only_the_last_five_batches_are_kept_and_the_producers_held_are_bounded() -> None:
    seqs = ProducerSequences(max_producers=2)
    seqs.started(1)
    for n in range(KEPT_BATCHES + 1):
        seqs.stored(1, 0, "t", 0, n, 1, base_offset=n)
    assert seqs.decide(1, 0, "t", 0, 0, 1)[0] is SequenceVerdict.OUT_OF_ORDER  # the first batch is no longer kept
    seqs.started(2)
    seqs.started(3)
    assert not seqs.known(1) and seqs.known(2) and seqs.known(3)
