# knobtop: `make lab` opens the live screen on a sandbox server; `make test` runs the suite.
# Both set up what they need first (a .venv, and Debian packages via apt when run as root).

VENV    ?= .venv
PY      := $(VENV)/bin/python
STAMP   := $(VENV)/.installed
LAB_PKGS  := mariadb-server sysbench strace
BENCH_PKGS := mariadb-server sysbench tmux
TEST_PKGS := mariadb-server sysbench openssh-server galera-4 rsync mariadb-plugin-rocksdb tmux \
             zsh fish chromium sudo strace

.PHONY: lab test check lint layers typecheck pytest bench setup lock deps-lab deps-test deps-bench clean \
        docs docs-ref screenshot

# make lab ARGS="--fresh --load oltp_read_only": ARGS go to `knobtop lab` (LAB_ARGS too).
lab: deps-lab $(STAMP)
	$(VENV)/bin/knobtop lab $(ARGS) $(LAB_ARGS)

test: deps-test $(STAMP) lint layers typecheck pytest

check: test

# The tests without a server (parsers, statistics, screens under run_test) in two workers,
# then the live ones in two workers, a test file per worker at a time (a file's module
# fixtures are started once). Each worker has its own mariadbd, sshd and galera cluster on
# free loopback ports; tmux panes do not inherit the COLUMNS and LINES xdist sets. Last,
# one after another with nothing beside them, the live tests marked serial: their
# assertions hold the machine's timing (sysbench's per-second lines add up to its summary,
# throughput verdicts, samples on schedule, deadlines), which a second saturating sysbench
# beside them bends.
pytest: $(STAMP)
	$(PY) -m pytest -n 2 -m "not integration"
	$(PY) -m pytest -n 2 --dist loadfile -m "integration and not serial" --durations=25
	$(PY) -m pytest -m "integration and serial" --durations=10

lint: $(STAMP)
	$(VENV)/bin/ruff check app tests bench tools

# DESIGN.md's Parts table as import-linter contracts (pyproject.toml [tool.importlinter]).
layers: $(STAMP)
	$(VENV)/bin/lint-imports --no-logo --no-cache

typecheck: $(STAMP)
	$(VENV)/bin/mypy

# The documentation site (mkdocs.yml; docs/ reads as plain Markdown too) into site/, with no
# warnings. tests/unit/test_docs_*.py check its references, links and commands in `make test`.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet

# docs/reference/{cli,recipe-files,journal,keys}.md from the code (tests/unit/test_docsref.py
# fails when one is out of date).
docs-ref: $(STAMP)
	$(PY) tools/docsref.py

# docs/live-screen.svg: the lab's live screen under load, saved by knobtop's own `S` key in
# a real tmux pane (a sandbox of its own in a temporary folder).
screenshot: deps-bench $(STAMP)
	$(PY) tools/screenshot.py docs/live-screen.svg

# One table of knobtop's performance goals, measured side by side with dolphie (installed
# into bench/.dolphie-venv on first use); writes bench/RESULTS.md. About 20 minutes.
# BENCH_ARGS=--quick for a 2-minute check that writes nothing.
bench: deps-bench $(STAMP)
	$(PY) bench/run_all.py $(BENCH_ARGS)

setup: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	@python3 -c 'import ensurepip' 2>/dev/null || $(MAKE) --no-print-directory apt PKGS=python3-venv
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -c constraints.txt -e '.[dev]'
	touch $(STAMP)

# constraints.txt: the exact versions `make` installs (Textual's above all: knobtop.ui.patches
# reaches into its internals). After changing a dependency in pyproject.toml, install it into
# the .venv and run `make lock`.
lock: $(STAMP)
	@{ echo "# The exact versions make installs (pip install -c constraints.txt); written by make lock."; \
	  $(VENV)/bin/pip freeze --exclude-editable | LC_ALL=C sort -f; } > constraints.txt

deps-lab:
	@$(MAKE) --no-print-directory apt PKGS="$(call missing,$(LAB_PKGS))"

deps-test:
	@$(MAKE) --no-print-directory apt PKGS="$(call missing,$(TEST_PKGS))"

deps-bench:
	@$(MAKE) --no-print-directory apt PKGS="$(call missing,$(BENCH_PKGS))"

# The packages among $(1) whose program is not on this machine.
missing = $(strip \
  $(if $(filter mariadb-server,$(1)),$(if $(shell PATH=$$PATH:/usr/sbin command -v mariadbd),,mariadb-server)) \
  $(if $(filter sysbench,$(1)),$(if $(shell command -v sysbench),,sysbench)) \
  $(if $(filter openssh-server,$(1)),$(if $(wildcard /usr/sbin/sshd),,openssh-server)) \
  $(if $(filter galera-4,$(1)),$(if $(wildcard /usr/lib/galera/libgalera_smm.so),,galera-4)) \
  $(if $(filter rsync,$(1)),$(if $(shell command -v rsync),,rsync)) \
  $(if $(filter mariadb-plugin-rocksdb,$(1)),$(if $(wildcard /usr/lib/mysql/plugin/ha_rocksdb.so),,mariadb-plugin-rocksdb)) \
  $(if $(filter tmux,$(1)),$(if $(shell command -v tmux),,tmux)) \
  $(if $(filter zsh,$(1)),$(if $(shell command -v zsh),,zsh)) \
  $(if $(filter fish,$(1)),$(if $(shell command -v fish),,fish)) \
  $(if $(filter chromium,$(1)),$(if $(wildcard /usr/bin/chromium),,chromium)) \
  $(if $(filter sudo,$(1)),$(if $(shell command -v sudo),,sudo)) \
  $(if $(filter strace,$(1)),$(if $(shell command -v strace),,strace)))

# Install PKGS with apt as root; otherwise print the exact command and stop.
apt:
	@if [ -z "$(strip $(PKGS))" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ]; then \
	  echo "Installing with apt: $(PKGS)"; \
	  DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(PKGS); \
	else \
	  echo "knobtop needs these Debian packages: $(PKGS)"; \
	  echo "Run:  sudo apt-get install -y $(PKGS)   and then this make command again."; \
	  exit 1; \
	fi

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache bench/.dolphie-venv site
