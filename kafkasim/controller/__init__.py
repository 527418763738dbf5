"""The KRaft controller's side of a cluster: where replicas go (``StripedReplicaPlacer``).

Registrations, heartbeats, fencing and elections come with leader failover (a later step); what is here is
SimPy-free and runs once, when a run's topics are created.
"""
