"""Kafka's recovery rules as lenses over the walker, shared by the checks and the repairs."""
