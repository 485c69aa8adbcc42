"""Session fixture: a real 3-node MariaDB Galera cluster on loopback (``galera_cluster``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.binaries import in_ci, require_binary
from harness.galera import GALERA_PROVIDER, GaleraCluster


def require_galera_provider() -> str:
    """The Galera wsrep provider library; fail in CI, skip locally, when it is missing."""
    if Path(GALERA_PROVIDER).exists():
        return GALERA_PROVIDER
    message = (
        f"the Galera provider {GALERA_PROVIDER} is missing; "
        "install it with: apt-get install -y galera-4 rsync"
    )
    if in_ci():
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


@pytest.fixture(scope="session")
def galera_cluster() -> Iterator[GaleraCluster]:
    """Three Synced nodes n1..n3 and a ``knobtop`` user; shut down n3, n2, n1 at the end."""
    server = require_binary("mariadbd", "mariadb-server")
    install_db = require_binary("mariadb-install-db", "mariadb-server")
    client = require_binary("mariadb", "mariadb-client")
    require_binary("wsrep_sst_rsync", "mariadb-server")
    require_binary("rsync", "rsync")
    require_galera_provider()
    with GaleraCluster(server=server, install_db=install_db, client=client) as cluster:
        yield cluster
