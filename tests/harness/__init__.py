"""Test harness helpers: real external binaries (sshd, ...) for integration tests."""
