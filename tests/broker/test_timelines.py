"""Kafka's end-to-end timelines (acks=all produce, consumer long poll, under min ISR), driven by hand with
ManualTime.

Followers here are real follower-side ``Log``s fed from the leader's fetch responses, the way the engine's
replica fetcher will drive them (ReplicaFetcherThread).
"""

from kafkasim.broker.config import LogConfig
from kafkasim.broker.errors import Errors
from kafkasim.broker.log import Log

from .support import Broker, batch


class Follower:
    """A follower broker's replica fetcher for one partition: fetch at its LEO, apply the response."""

    def __init__(self, broker: Broker, replica_id: int) -> None:
        self.broker = broker
        self.replica_id = replica_id
        self.log = Log(LogConfig(), broker.time, name=f"follower-{replica_id}")
        self.reply = None

    def fetch(self, max_wait_ms: int = 500):
        self.reply = self.broker.fetch(self.replica_id, self.log.log_end_offset, max_wait_ms=max_wait_ms)
        return self.reply

    def apply(self) -> None:
        """Process the (single) response of the last fetch, as ReplicaFetcherThread.processPartitionData."""
        result = self.reply.partition()
        assert result.error is Errors.NONE
        if result.records:
            self.log.append_as_follower(result.records)
        self.log.maybe_update_high_watermark(result.high_watermark)


def steady_state(n_batches: int = 1):
    """RF 3, ISR {0,1,2}: N records produced, fully replicated, HW = N on all; followers parked at N."""
    broker = Broker(replicas=(0, 1, 2))
    followers = [Follower(broker, 1), Follower(broker, 2)]
    for _ in range(n_batches):
        broker.produce(batch(), acks=1)
    for f in followers:  # copy the data
        f.fetch(max_wait_ms=0)
        f.apply()
    for f in followers:  # report the LEO: HW moves
        f.fetch(max_wait_ms=0)
        f.apply()
    assert broker.log.high_watermark == 10 * n_batches
    return broker, followers


def test_acks_all_completes_on_second_followers_next_fetch():
    broker, (f1, f2) = steady_state()
    n = broker.log.log_end_offset
    # Everyone has HW = N now except via this round; park both followers at N.
    for f in (f1, f2):
        f.fetch()
        assert not f.reply.done
    consumer = broker.fetch(-1, broker.log.high_watermark)
    assert not consumer.done

    # 1-2. The produce appends (HW unchanged) and parks its DelayedProduce; the follower fetches are only
    # woken at the end of the request (action queue).
    produce = broker.produce(batch(records=5), acks=-1, end_request=False)
    assert broker.log.log_end_offset == n + 5
    assert broker.log.high_watermark == n
    assert not produce.done
    assert broker.rm.produce_purgatory.num_delayed == 1
    assert not f1.reply.done and not f2.reply.done

    # 3. End of the produce request: both parked follower fetches complete with the new batch and HW = N.
    broker.rm.try_complete_actions()
    for f in (f1, f2):
        result = f.reply.partition()
        assert [b.base_offset for b in result.records] == [n]
        assert result.high_watermark == n
        f.apply()
    assert not produce.done
    assert not consumer.done

    # 4. F1's next fetch reports N+5: the HW waits for F2.
    f1.fetch()
    assert broker.log.high_watermark == n
    assert not produce.done
    # F2's next fetch reports N+5: HW -> N+5, the produce completes from inside F2's fetch handling, and
    # the consumer parked at the old HW completes too.
    f2.fetch(max_wait_ms=0)
    assert broker.log.high_watermark == n + 5
    assert produce.partition().error is Errors.NONE
    assert produce.partition().base_offset == n
    assert [b.base_offset for b in consumer.partition().records] == [n]
    assert consumer.partition().high_watermark == n + 5
    # F2's own response carries the HW from before its fetch (Partition.readRecords) ...
    assert f2.reply.partition().high_watermark == n
    f2.apply()
    assert f2.log.high_watermark == n
    # ... and F1, parked, learns the new HW only when its long poll ends (500 ms later, idle).
    assert not f1.reply.done
    broker.advance(499)
    assert not f1.reply.done
    broker.advance(1)
    assert f1.reply.partition().high_watermark == n + 5
    assert not f1.reply.partition().records
    f1.apply()
    assert f1.log.high_watermark == n + 5
    assert broker.rm.metrics.fetch_expires_follower == 1


def test_acks_all_times_out_without_followers():
    broker, _ = steady_state()
    produce = broker.produce(batch(), acks=-1, timeout_ms=30_000)
    broker.advance(29_999)
    assert not produce.done
    broker.advance(1)
    assert produce.partition().error is Errors.REQUEST_TIMED_OUT
    assert broker.rm.metrics.produce_expires == 1
    assert broker.rm.produce_purgatory.num_delayed == 0


def test_consumer_parked_at_hw_completes_when_hw_moves():
    broker, (f1, f2) = steady_state()
    hw = broker.log.high_watermark
    consumer = broker.fetch(-1, hw)
    assert not consumer.done
    broker.produce(batch(), acks=1)
    assert not consumer.done  # LEO moved, HW did not: consumers wait for the HW
    f1.fetch(max_wait_ms=0)
    f1.apply()
    f1.fetch(max_wait_ms=0)  # F1 at the LEO, F2 not yet
    assert not consumer.done
    f2.fetch(max_wait_ms=0)
    f2.apply()
    f2.fetch(max_wait_ms=0)  # HW moves on the same segment: positionDiff > 0
    result = consumer.partition()
    assert [b.base_offset for b in result.records] == [hw]
    assert result.high_watermark == hw + 10


def test_consumer_parked_at_hw_returns_empty_at_max_wait():
    broker, _ = steady_state()
    hw = broker.log.high_watermark
    consumer = broker.fetch(-1, hw, max_wait_ms=500)
    broker.produce(batch(), acks=1)  # LEO moves, HW does not
    broker.advance(499)
    assert not consumer.done
    broker.advance(1)
    result = consumer.partition()
    assert result.error is Errors.NONE
    assert not result.records and result.size_in_bytes == 0
    assert result.high_watermark == hw
    assert broker.rm.metrics.fetch_expires_consumer == 1


def test_parked_follower_fetch_completes_early_when_leader_rolls():
    broker = Broker(replicas=(0, 1), segment_bytes=1000)
    for _ in range(9):
        broker.produce(batch(size=100), acks=1)  # 900 bytes in segment 0
    leo = broker.log.log_end_offset
    # A follower parked at the LEO asking for 1000 bytes.
    follower = broker.fetch(1, leo, min_bytes=1000)
    assert not follower.done
    broker.produce(batch(size=50), acks=1)  # same segment: 50 bytes accumulated, not enough
    assert not follower.done
    broker.produce(batch(size=100), acks=1)  # 950 + 100 > 1000: rolls, the LEO is on a newer segment
    assert len(broker.log.segments) == 2
    result = follower.partition()  # Case F, long before the 500 ms max wait
    assert [b.base_offset for b in result.records] == [leo]  # re-read: rest of the old segment only
    assert broker.time.milliseconds() == 0


def test_under_min_isr_acks_all_rejected_and_waiting_ones_time_out():
    broker = Broker(replicas=(0, 1, 2), min_isr=2)
    waiting = broker.produce(batch(), acks=-1, timeout_ms=60_000)
    assert not waiting.done
    # Followers never fetch: after replica.lag.time.max.ms the shrink check drops both.
    broker.advance(30_001)
    broker.rm.maybe_shrink_isr()
    assert broker.partition.isr == {0}
    assert broker.rm.metrics.isr_shrinks == 1
    # 3.7+: under min ISR the HW stays frozen, so the waiting produce does not complete with
    # NOT_ENOUGH_REPLICAS_AFTER_APPEND (Partition.maybeIncrementLeaderHW, 3.7+).
    assert broker.log.high_watermark == 0
    assert not waiting.done

    leo = broker.log.log_end_offset
    rejected = broker.produce(batch(), acks=-1)
    assert rejected.partition().error is Errors.NOT_ENOUGH_REPLICAS
    assert broker.log.log_end_offset == leo  # nothing appended
    accepted = broker.produce(batch(), acks=1)
    assert accepted.partition().error is Errors.NONE
    assert broker.log.log_end_offset == leo + 10
    assert broker.log.high_watermark == 0  # appended but invisible

    consumer = broker.fetch(-1, 0, max_wait_ms=0)
    assert not consumer.partition().records

    broker.advance(60_000 - 30_001)
    assert waiting.partition().error is Errors.REQUEST_TIMED_OUT


def test_shrink_commit_releases_acks_all_when_not_under_min_isr():
    # Contrast with the previous test: min ISR 1, so the shrink lets the HW advance.
    broker = Broker(replicas=(0, 1, 2), min_isr=1)
    waiting = broker.produce(batch(), acks=-1, timeout_ms=60_000)
    broker.advance(30_001)
    broker.rm.maybe_shrink_isr()
    assert broker.log.high_watermark == 10
    assert waiting.partition().error is Errors.NONE

