"""`python -m knobtop` runs the command line."""

from knobtop.cli import main

raise SystemExit(main())
