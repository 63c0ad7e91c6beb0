"""Helpers the tests of several groups share (fixture data, readers, verify and dump runners)."""
