"""Hosts: where commands run and OS metrics come from.

Names are imported from their modules on first use (knobtop.lazyface)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from knobtop.lazyface import lazy_names

if TYPE_CHECKING:
    from knobtop.hosts.base import HOST_CPU_FIELDS, CommandResult, Host, HostError, RunningCommand
    from knobtop.hosts.local import LocalHost, LocalProcess, write_atomic

__getattr__ = lazy_names(__name__, {
    "HOST_CPU_FIELDS": "knobtop.hosts.base",
    "CommandResult": "knobtop.hosts.base",
    "Host": "knobtop.hosts.base",
    "HostError": "knobtop.hosts.base",
    "RunningCommand": "knobtop.hosts.base",
    "LocalHost": "knobtop.hosts.local",
    "LocalProcess": "knobtop.hosts.local",
    "write_atomic": "knobtop.hosts.local",
})

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
