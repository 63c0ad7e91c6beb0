"""logtool: forensics and repair for Apache Kafka log directories."""

__version__ = "0.1.0"
