"""What the processes import, and what they leave for when it is needed (issue 16 row 5d).

The MySQL driver loads without `cryptography`; the RSA password step imports it when run.

PyMySQL imports `cryptography` at once for one step of MySQL's sha256 password plugins
(about 10 MB of the session process's RSS). knobtop imports the driver with the package
reading as absent and gives PyMySQL's `_auth` module its RSA helper back on first use.
Each check runs in a fresh interpreter, where nothing has imported either package yet.
The live screen's log panes load Textual's RichLog the same way without `attrs`
(knobtop.lazyface.absent_while_importing does both).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from knobtop.server.link import ConnectionInfo


def _probe(code: str, stdin: str = "") -> dict[str, object]:
    run = subprocess.run([sys.executable, "-c", code], input=stdin, capture_output=True,
                         text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


RSA_ROUND_TRIP = """
import json, sys
from knobtop.server.link import _drivers
_drivers()
loaded_after_import = "cryptography" in sys.modules
import pymysql._auth as auth
import aiomysql.connection
same_module = aiomysql.connection._auth is auth  # aiomysql calls the helper through it
stand_in = auth.sha2_rsa_encrypt.__qualname__
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
pem = key.public_key().public_bytes(serialization.Encoding.PEM,
                                    serialization.PublicFormat.SubjectPublicKeyInfo)
salt = bytes(range(1, 21))
sent = auth.sha2_rsa_encrypt(b"s3cret-pass", salt, pem)
oaep = padding.OAEP(mgf=padding.MGF1(algorithm=hashes.SHA1()), algorithm=hashes.SHA1(),
                    label=None)
plain = key.decrypt(sent, oaep)
expected = bytes(b ^ salt[i % len(salt)] for i, b in enumerate(b"s3cret-pass\\0"))
print(json.dumps({"loaded_after_import": loaded_after_import, "stand_in": stand_in,
                  "round_trip": plain == expected, "same_module": same_module,
                  "have": auth._have_cryptography,
                  "restored": auth.sha2_rsa_encrypt.__qualname__}))
"""


def test_the_driver_loads_without_cryptography_and_the_rsa_step_still_works() -> None:
    got = _probe(RSA_ROUND_TRIP)
    assert got["loaded_after_import"] is False
    assert got["same_module"] is True
    assert got["stand_in"] == "_rsa_on_first_use.<locals>.sha2_rsa_encrypt"
    # What the server would decrypt is the password xor the scramble, as PyMySQL sends it.
    assert got["round_trip"] is True
    assert got["have"] is True and got["restored"] == "sha2_rsa_encrypt"


def test_a_process_that_already_has_cryptography_keeps_pymysql_as_it_is() -> None:
    got = _probe("import json, sys, cryptography.hazmat.primitives.serialization\n"
                 "from knobtop.server.link import _drivers\n_drivers()\n"
                 "import pymysql._auth as auth\n"
                 "print(json.dumps({'have': auth._have_cryptography,"
                 " 'fn': auth.sha2_rsa_encrypt.__qualname__}))")
    assert got == {"have": True, "fn": "sha2_rsa_encrypt"}


def test_without_the_package_the_rsa_step_names_it() -> None:
    # A finder that refuses `cryptography` stands for a machine without it.
    got = _probe("""
import json, sys
class NoCryptography:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "cryptography":
            raise ImportError("no module named cryptography")
sys.meta_path.insert(0, NoCryptography())
from knobtop.server.link import _drivers
_drivers()
import pymysql._auth as auth
try:
    auth.sha2_rsa_encrypt(b"pw", b"x" * 20, b"-----BEGIN PUBLIC KEY-----")
except RuntimeError as err:
    print(json.dumps({"message": str(err)}))
""")
    assert "'cryptography' package is required" in str(got["message"])


def test_the_blocking_stand_in_does_not_outlive_the_import() -> None:
    got = _probe("import json, sys\nfrom knobtop.server.link import _drivers\n_drivers()\n"
                 "blocked = 'cryptography' in sys.modules\n"
                 "import cryptography\n"
                 "print(json.dumps({'blocked': blocked, 'file': bool(cryptography.__file__)}))")
    assert got == {"blocked": False, "file": True}


PROBE_CONNECT = """
import asyncio, json, sys
from knobtop.server.link import ConnectionInfo, ServerLink
info = ConnectionInfo(**json.loads(sys.stdin.read()))
async def main():
    link = ServerLink(info)
    async with asyncio.timeout(20):
        await link.connect()
        try:
            rows = await link.query("SELECT CURRENT_USER()", timeout=10)
        finally:
            await link.close()
    return rows
rows = asyncio.run(main())
print(json.dumps({"user": str(rows[0][0]), "cryptography": "cryptography" in sys.modules}))
"""


@pytest.mark.integration
def test_a_session_on_mariadb_connects_and_queries_without_loading_cryptography(
    mariadb_info: ConnectionInfo,
) -> None:
    fields = {"host": mariadb_info.host, "port": mariadb_info.port, "user": mariadb_info.user,
              "password": mariadb_info.password, "socket": mariadb_info.socket}
    got = _probe(PROBE_CONNECT, stdin=json.dumps(fields))  # the password on stdin, not argv
    assert str(got["user"]).startswith(f"{mariadb_info.user}@")
    assert got["cryptography"] is False



RICHLOG_IMPORT = """
import importlib.util, json, sys
{first}
import knobtop.ui.widgets.journal_pane, knobtop.ui.widgets.recipe_panel
import rich.pretty
from textual.widgets import RichLog
out = {{"attr_loaded": "attr" in sys.modules, "has_attrs": rich.pretty._has_attrs,
        "same_class": knobtop.ui.widgets.journal_pane.RichLog is RichLog}}
import attr  # the stand-in is gone: the package imports as usual afterwards
out["attr_after"] = hasattr(attr, "define")
print(json.dumps(out))
"""


def test_the_journal_panes_richlog_loads_without_attrs() -> None:
    """RichLog imports rich.pretty, which imports attrs (about 0.4 MB of the live screen)
    only to pretty-print attrs classes; the panes write Text.  attrs is installed here
    (textual-serve's aiohttp needs it), so the check means something."""
    import importlib.util

    assert importlib.util.find_spec("attr") is not None
    got = _probe(RICHLOG_IMPORT.format(first=""))
    assert got == {"attr_loaded": False, "has_attrs": False, "same_class": True,
                   "attr_after": True}


def test_a_process_that_already_has_attrs_keeps_rich_pretty_as_it_is() -> None:
    got = _probe(RICHLOG_IMPORT.format(first="import attr"))
    assert got["has_attrs"] is True and got["attr_loaded"] is True


def test_the_feedback_the_session_forks_with_leaves_rich_progress_for_its_bars() -> None:
    """ConsoleFeedback is imported before the session's process forks, so what it imports
    both processes hold; rich.progress (with Live, Table and Spinner, about 1.2 MB) comes
    only when a bar is shown."""
    got = _probe("import json, sys\n"
                 "from knobtop.headless import ConsoleFeedback\n"
                 "before = 'rich.progress' in sys.modules\n"
                 "import asyncio, io\n"
                 "from rich.console import Console\n"
                 "from knobtop.load.base import LoadSpec\n"
                 "out = io.StringIO()\n"
                 "feedback = ConsoleFeedback(Console(file=out, width=100))\n"
                 "async def prepare(on_progress):\n"
                 "    return True\n"
                 "asyncio.run(feedback.prepare(LoadSpec(tables=2, table_size=100), prepare))\n"
                 "print(json.dumps({'before': before, 'after': 'rich.progress' in sys.modules,"
                 " 'said': out.getvalue().strip()}))")
    assert got == {"before": False, "after": True,
                   "said": "Loaded 2 sysbench tables x 100 rows"}


def test_a_recipe_order_and_its_runner_load_no_rich() -> None:
    """A recipe's run happens in the session's process (recipes/orders.py): what it needs
    to unpickle the order and run it there (the runner, the results' cells and notes) loads
    no rich; its tables are drawn by the front end."""
    got = _probe("import json, sys\n"
                 "import knobtop.recipes.orders, knobtop.recipes.runner\n"
                 "print(json.dumps({'rich': sorted(m for m in sys.modules"
                 " if m == 'rich' or m.startswith('rich.'))}))")
    assert got == {"rich": []}


def test_the_bundled_folders_are_found_without_importlib_resources() -> None:
    """The themes' folder is found at the screen's start; importlib.resources (ten modules,
    zipfile among them) would name the same folder for a package installed as files
    (tests/live/test_wheel.py checks an installed wheel finds its own)."""
    got = _probe("import json, sys\n"
                 "from knobtop.bundled import bundled_dir\n"
                 "themes = bundled_dir('themes')\n"
                 "print(json.dumps({'loaded': sorted(m for m in ('importlib.resources', "
                 "'zipfile') if m in sys.modules), 'themes': sorted(p.name for p in "
                 "themes.glob('*.toml'))}))")
    from knobtop.bundled import bundled_dir

    assert got["loaded"] == []
    assert got["themes"] == sorted(p.name for p in bundled_dir("themes").glob("*.toml")) != []


KNOB_PANEL = """
import asyncio, io, json, sys
from textual.app import App
from knobtop.cli.views import stderr_console
from knobtop.ui.widgets.knob_panel import KnobPanel

class Panel(App[None]):
    def compose(self):
        yield KnobPanel()

async def main():
    app = Panel()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        labels = [c.label.plain for c in app.query_one(KnobPanel).columns.values()]
    console = stderr_console()
    console.file = io.StringIO()
    console.print("Access denied :x: for 'bench'@'%'", markup=False, highlight=False)
    from knobtop.headless import progress_bars
    with progress_bars(console, "{task.completed}/{task.total}") as bars:
        bars.add_task("recipe [b]x[/b] :x:", total=2)
    print(json.dumps({"codes": "rich._emoji_codes" in sys.modules, "labels": labels,
                      "said": console.file.getvalue().split()[:8]}))

asyncio.run(main())
"""


def test_emoji_codes_are_text_and_their_table_stays_unloaded() -> None:
    """Rich replaces ``:name:`` codes by default, loading a table of 3,600 of them (about
    1 MB in each of the live screen's processes): the knob panel's headers, what knobtop
    prints on the terminal (a server's message among it) and its progress bars' names are
    taken as written."""
    got = _probe(KNOB_PANEL)
    assert got == {"codes": False, "labels": ["knob", "value", ""],
                   "said": ["Access", "denied", ":x:", "for", "'bench'@'%'",
                            "recipe", "[b]x[/b]", ":x:"]}
