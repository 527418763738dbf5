"""kafkasim: a simulator of one Kafka broker's request handling."""

__version__ = "0.1.0"
