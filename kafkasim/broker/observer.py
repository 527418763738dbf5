"""What a broker's state machines tell an observer (the run's invariant checks), through a constructor
argument. SimPy-free like the rest of broker/; the run's observer (``kafkasim.network.observer.Observer``)
extends it with the network, server and client events."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from mypy_extensions import mypyc_attr

if TYPE_CHECKING:
    from kafkasim.broker.partition import Partition
    from kafkasim.broker.records import TopicPartition


# Open to interpreted subclasses when compiled (mypyc): network's Observer, which the run layer subclasses.
@mypyc_attr(allow_interpreted_subclasses=True)
class BrokerObserver:
    """Every method does nothing; an observer overrides the events it wants."""

    # Whether the observer wants the events that exist for invariant checks (marked "check event"). When
    # it does not, components skip those calls: on the hot path a call that does nothing still costs. A
    # ClassVar, so that a subclass's `checks = True` is seen by compiled components too (mypyc would make a
    # plain attribute an instance slot with its own default).
    checks: ClassVar[bool] = False

    def became_leader(self, broker_id: int, tp: TopicPartition, partition: Partition) -> None:
        """``ReplicaManager.make_leader`` finished: ``broker_id`` leads ``tp`` with the partition's ISR."""

    def isr_from_metadata(self, broker_id: int, tp: TopicPartition, isr: tuple[int, ...],
                          unclean: bool = False) -> None:
        """Check event. ``broker_id`` is about to lead ``tp`` with the ISR the controller committed
        (``ReplicaManager.apply_delta``): told before ``Partition.makeLeader``, which may move the HW and
        acknowledge produces at once. ``unclean``: the registration's ``leaderRecoveryState`` is RECOVERING
        (an unclean election chose it from outside the ISR)."""

    def acks_satisfied(self, tp: TopicPartition, required_offset: int, partition: Partition | None = None) -> None:
        """Check event. ``DelayedProduce.tryComplete`` settled an acks=all partition with NONE: HW >= ``required_offset``
        and min ISR <= |maximal ISR| (``Partition.checkEnoughReplicasReachOffset``); ``partition`` is the
        leader's that decided (a deposed leader that has not heard of its successor yet may still decide)."""

    def segment_rolled(self, broker_id: int, tp: TopicPartition, base_offset: int, reason: str,
                       leader: bool) -> None:
        """``broker_id``'s log of ``tp`` rolled a new active segment at ``base_offset`` (``reason``: which
        of ``LogSegment.shouldRoll``'s conditions, or retention); ``leader``: the broker leads ``tp``."""

    def high_watermark_reached_segment(self, broker_id: int, tp: TopicPartition, base_offset: int,
                                       passed: bool) -> None:
        """The leader's high watermark of ``tp`` first lies in the segment rolled at ``base_offset`` (``passed``
        False: consumer fetches parked below ``base_offset`` on an older segment complete now), or first lies
        above ``base_offset`` (True: those parked at it complete now) -- ``DelayedFetch.tryComplete``'s case F."""
