"""Hosts: where commands run and OS metrics come from (local now, SSH in #3)."""

from knobtop.hosts.base import HOST_CPU_FIELDS, CommandResult, Host, HostError, RunningCommand
from knobtop.hosts.local import LocalHost, LocalProcess, write_atomic

__all__ = [
    "HOST_CPU_FIELDS",
    "CommandResult",
    "Host",
    "HostError",
    "LocalHost",
    "LocalProcess",
    "RunningCommand",
    "write_atomic",
]
