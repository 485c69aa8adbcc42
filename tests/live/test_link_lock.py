"""ServerLink.query on a shared link: the wait for the link counts against the limit."""

from __future__ import annotations

import asyncio

import pytest

from knobtop.server.link import ConnectionInfo, QueryTimeout, ServerLink

pytestmark = pytest.mark.integration


async def test_waiting_for_a_busy_link_counts_against_the_limit(
    mariadb_info: ConnectionInfo,
) -> None:
    """A 1 s query behind a 3 s one on the same link gives up after ~1 s without sending
    (before, the lock was taken outside the timeout: it waited the full 3 s, then had its
    own 1 s). The statement holding the link is not disturbed and the link stays open."""
    link = ServerLink(mariadb_info)
    async with asyncio.timeout(10):
        await link.connect()
    try:
        holder = asyncio.create_task(link.query("SELECT SLEEP(3)", timeout=10))
        await asyncio.sleep(0)  # one step: the holder takes the link (no I/O before that)
        assert link._lock.locked()
        loop = asyncio.get_running_loop()
        started = loop.time()
        async with asyncio.timeout(2.5):
            with pytest.raises(QueryTimeout, match=r"busy with another statement for 1 s") as err:
                await link.query("SELECT 1", timeout=1)
        assert 0.9 < loop.time() - started < 2.5
        assert err.value.limit == 1
        assert link.connected  # the waiting statement did not close the holder's link
        async with asyncio.timeout(10):
            assert await holder == [(0,)]  # SLEEP returns 0 when not interrupted
            assert await link.query("SELECT 2", timeout=5) == [(2,)]
    finally:
        await link.close()


async def test_a_statement_cancelled_from_outside_takes_the_link_with_it(
    mariadb_info: ConnectionInfo,
) -> None:
    """A caller's own deadline (wait_for around the query) cancels a statement the server is
    still running: the link is closed then, because its answer would come later and be
    read as the next statement's (before, the next SELECT 2 got the SLEEP's 0)."""
    link = ServerLink(mariadb_info)
    async with asyncio.timeout(10):
        await link.connect()
    try:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(link.query("SELECT SLEEP(1)", timeout=10), 0.2)
        assert not link.connected
        async with asyncio.timeout(10):
            await link.connect()
            assert await link.query("SELECT 2", timeout=5) == [(2,)]
    finally:
        await link.close()
