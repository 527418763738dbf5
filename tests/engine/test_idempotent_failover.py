"""An idempotent producer across leader changes: where Kafka's own client and broker write a batch twice, and
the invariant that holds the rest (issue 26, item 1).

``random_found/idempotent-duplicate-after-epoch-bump.yaml`` (found by a random failover hunt: 5 brokers, 24
partitions, a controlled shutdown, a crash and a 15.6 s pause; the pause moved earlier when the fence timing
became Kafka 4.3's) runs this chain, every step of which is
Kafka 4.x's:

1. Producer p1's first batches of t-6 go to broker 4, its leader, which is paused:
   they hang there (up to ``max.in.flight.requests.per.connection``).
2. The controller fences broker 4 and elects broker 3. p1's next batch (a first send) goes to
   broker 3 while the first are still in flight to broker 4: ``RecordAccumulator.
   shouldStopDrainBatchesForPartition`` holds back only retries and batches of a stale epoch.
3. Broker 3 has never seen p1 on t-6 and accepts that batch's sequence (``ProducerAppendInfo.checkSequence``: no
   producer epoch yet, any sequence). The ISR cannot advance the HW, so the request times out on the client.
4. The first batch (sequence 0) is retried to broker 3: OUT_OF_ORDER_SEQUENCE_NUMBER. It is the producer's
   next sequence (nothing acknowledged yet), so ``TransactionManager.canRetry`` asks for an epoch bump, and
   ``bumpIdempotentProducerEpoch`` -> ``startSequencesAtBeginning`` gives every batch in flight the new
   epoch and sequences from 0 -- the one broker 3 already wrote included.
5. Under the new epoch broker 3 appends them all: the batch it had already written is in the log twice.

The records table marks such a batch ``sequence_reset``; the invariant check stops only duplicates whose
sequence was never rewritten (the broker must deduplicate those: ``ProducerStateEntry``'s last 5 batches).
"""

from __future__ import annotations

from pathlib import Path

from kafkasim import load_scenario
from kafkasim.run.engine import Engine

FOUND = Path(__file__).parent / "random_found" / "idempotent-duplicate-after-epoch-bump.yaml"


def test_an_epoch_bump_that_rewrites_a_written_batch_writes_it_twice_and_the_run_goes_on() -> None:
    engine = Engine(load_scenario(FOUND))
    assert engine.scenario.invariants
    result = engine.run()  # the invariant checks hold: the duplicate is Kafka's own
    records = result.records
    twice = records[records["outcome"].astype(str) == "duplicated"]
    assert len(twice) == 1
    row = twice.iloc[0]
    assert (row["producer"], row["topic"], int(row["partition"])) == ("p1", "t", 6)
    assert bool(row["sequence_reset"]) and int(row["attempts"]) == 2
    bumps = {p.name: p.txn.epoch_bumps for p in engine.components.producers if p.txn is not None}
    assert bumps == {"p0": 0, "p1": 1, "p2": 0}
    requests = result.requests
    answers = requests[(requests["client"] == "p1") & (requests["broker"] == 3)
                       & (requests["error_name"] == "OUT_OF_ORDER_SEQUENCE_NUMBER")]
    assert len(answers) >= 1  # what asked for the bump
