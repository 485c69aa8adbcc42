"""`python -m knobtop.cli` runs the command line (as `python -m knobtop` does)."""

from knobtop.cli import main

raise SystemExit(main())
