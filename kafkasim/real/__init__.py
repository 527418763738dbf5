"""A scenario on a real Apache Kafka cluster: the same workload and faults as a simulated run, on Kafka's own
broker and clients (KRaft, on 127.0.0.1), written as a result directory in the simulated run's format.

* ``kafka_libs``: the pinned Kafka version, its jars fetched by Maven into a user cache (or a distribution).
* ``processes``: every JVM and proxy in its own process group, stopped by pid.
* ``cluster``: one KRaft controller and the scenario's brokers; crash, shutdown, pause, restart.
* ``netns``: for a network partition, every host in its own network namespace, its links cut by a router.
"""
