"""Fault tests: crashes, lost hosts, kill -9, full disks, and fuzzed parsers (issue #9)."""
