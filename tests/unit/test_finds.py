"""The CLI that finds things: `run --list`, `tune --list`, `run NAME --plan` (with no
server reachable), `completion bash|zsh|fish` loaded in the real shells, and every
--help text: no `%%`, every repository path it names exists."""

from __future__ import annotations

import argparse
import re
import shlex
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from harness import paths as repo_paths
from harness.cli import knobtop as run_knobtop
from knobtop.cli.parser import build_parser
from knobtop.recipes.checks import offline_warnings
from knobtop.recipes.reader import BUNDLED_DIR, bundled_recipes, load_recipe
from knobtop.recipes.runner import short_duration
from knobtop.recipes.search import load_search

ROOT = repo_paths.REPO


def knobtop(*args: str, cwd: Path | None = None, home: Path | None = None
            ) -> subprocess.CompletedProcess[str]:
    env = None if home is None else {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}
    return run_knobtop(*args, cwd=cwd, env=env, columns=None)  # COLUMNS as the test run's


def test_run_list_names_every_bundled_recipe_with_its_facts() -> None:
    done = knobtop("run", "--list")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    paths = bundled_recipes()
    assert len(paths) >= 10
    assert f"{len(paths)} bundled recipes" in out
    blocks = {b.split()[0]: b for b in out.split("\n\n")[1:]}
    assert sorted(blocks) == sorted(load_recipe(p).name for p in paths)
    for path in paths:
        recipe = load_recipe(path)
        block = blocks[recipe.name]
        assert f"~{short_duration(recipe.planned_seconds)} or more" in block.splitlines()[0]
        assert " ".join(recipe.description.split())[:60] in block
        conditions = next(line for line in block.splitlines() if "conditions:" in line)
        for flavor, text in recipe.applies.items():
            assert f"{flavor} {text}" in conditions
        if recipe.curve is None:
            assert recipe.load.workload in conditions
        else:  # issue 39: a curve has no load; its probe is its work
            assert f"no load: probe {recipe.curve.probe}" in conditions
        for knob in recipe.knobs:
            assert knob in conditions


def test_tune_list_names_every_bundled_search() -> None:
    done = knobtop("tune", "--list")
    assert done.returncode == 0, done.stderr
    paths = sorted((BUNDLED_DIR / "tune").glob("*.toml"))
    assert paths
    for path in paths:
        search = load_search(path)
        line = next(x for x in done.stdout.splitlines() if x.startswith(search.name + " "))
        assert f"{search.trials} trials" in line
        assert search.description.split()[0] in done.stdout
        assert all(k in done.stdout for k in search.knob_names)


def listener() -> socket.socket:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    sock.setblocking(False)
    return sock


def accepted(sock: socket.socket) -> bool:
    try:
        conn, _ = sock.accept()
    except BlockingIOError:
        return False
    conn.close()
    return True


def test_plan_prints_steps_and_warnings_without_touching_a_server(tmp_path: Path) -> None:
    """A profile whose SSH and MySQL point at a port that would see any connection, and a
    lab directory that would be filled by a sandbox: the plan reaches neither."""
    ssh_port, mysql_port = listener(), listener()
    profiles = tmp_path / "home" / ".config" / "knobtop" / "profiles"
    profiles.mkdir(parents=True)
    (profiles / "far.toml").write_text(
        f'[target]\nssh = "knobtop@127.0.0.1:{ssh_port.getsockname()[1]}"\n'
        f'[target.mysql]\nhost = "127.0.0.1"\nport = {mysql_port.getsockname()[1]}\n'
        'user = "root"\n')
    recipe = load_recipe("doublewrite")
    steps = recipe.calibration_schedule() + recipe.schedule()
    done = knobtop("run", "doublewrite", "--plan", "--profile", "far",
                   home=tmp_path / "home")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    numbered = [x for x in lines if re.match(r"\s+\d+\.\s", x)]
    assert len(numbered) == len(steps)
    for line, step in zip(numbered, steps, strict=True):
        assert f"arm {step.arm.name} " in line and f" {step.threads} threads" in line
        assert f"round {step.replicate} " in line
    assert f"{len(steps)} steps, about {short_duration(recipe.planned_seconds)}" in done.stdout
    # the replicates warning a run says only once the server has answered
    for warning in offline_warnings(recipe):
        assert f"  - {warning}" in lines
    assert any("replicates = 2" in x for x in lines)
    assert not accepted(ssh_port) and not accepted(mysql_port)

    lab_dir = tmp_path / "lab"
    lab_dir.mkdir()
    one = knobtop("run", "aa-noise", "--plan", "--lab", "--dir", str(lab_dir),
                  "--replicates", "1", "--threads", "4")
    assert one.returncode == 0, one.stderr
    assert "no verdict" in one.stdout  # the one-replicate warning
    assert re.search(r"^\s+1\.\s+0:00 ", one.stdout, re.M)
    assert " 8 threads" not in one.stdout  # --threads 4 applies to the plan
    assert list(lab_dir.iterdir()) == []  # no sandbox was made or started
    ssh_port.close()
    mysql_port.close()


def test_run_without_a_place_or_a_recipe_says_the_fix() -> None:
    no_place = knobtop("run", "doublewrite")
    assert no_place.returncode == 2
    assert "--lab" in no_place.stderr and "--profile PROFILE" in no_place.stderr
    assert "--plan" in no_place.stderr
    no_recipe = knobtop("run", "--lab")
    assert no_recipe.returncode == 2 and "knobtop run --list" in no_recipe.stderr
    no_search = knobtop("tune", "--lab")
    assert no_search.returncode == 2 and "knobtop tune --list" in no_search.stderr


# --------------------------------------------------------------------------- completion


def completion_script(shell: str, tmp_path: Path) -> Path:
    done = knobtop("completion", shell)
    assert done.returncode == 0, done.stderr
    path = tmp_path / f"knobtop.{shell}"
    path.write_text(done.stdout)
    return path


def bash_complete(script: Path, words: list[str]) -> list[str]:
    """What bash's completion function for knobtop offers after ``words`` (the last one
    being the word under the cursor)."""
    bash = shutil.which("bash")
    assert bash, "bash is needed"
    program = (
        f"source {shlex.quote(str(script))}\n"
        "spec=$(complete -p knobtop) || exit 3\n"
        "func=$(sed -E 's/.*-F ([^ ]+).*/\\1/' <<<\"$spec\")\n"
        f"COMP_WORDS=({' '.join(shlex.quote(w) for w in words)})\n"
    )
    program += (
        "COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))\n"
        "COMP_LINE=\"${COMP_WORDS[*]}\"; COMP_POINT=${#COMP_LINE}\n"
        "\"$func\" knobtop \"${COMP_WORDS[COMP_CWORD]}\" \"${COMP_WORDS[COMP_CWORD-1]}\"\n"
        "printf '%s\\n' \"${COMPREPLY[@]}\"\n"
    )
    done = subprocess.run([bash, "--norc", "--noprofile", "-c", program], capture_output=True,
                          text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return [w.strip() for w in done.stdout.splitlines() if w.strip()]


def test_bash_completion_completes_commands_options_and_choices(tmp_path: Path) -> None:
    script = completion_script("bash", tmp_path)
    assert "run" in bash_complete(script, ["knobtop", "ru"])
    assert "completion" in bash_complete(script, ["knobtop", "comp"])
    assert "compare" in bash_complete(script, ["knobtop", "comp"])
    assert bash_complete(script, ["knobtop", "run", "--pl"]) == ["--plan"]
    assert "--list" in bash_complete(script, ["knobtop", "tune", "--l"])
    assert sorted(bash_complete(script, ["knobtop", "report", "--format", ""])) == \
        ["csv", "md", "steps-csv"]
    assert sorted(bash_complete(script, ["knobtop", "completion", ""])) == \
        ["bash", "fish", "zsh"]
    # a recipe or a search by its bundled name, or a file
    assert bash_complete(script, ["knobtop", "run", "doublew"]) == ["doublewrite"]
    assert bash_complete(script, ["knobtop", "tune", "commit-"]) == ["commit-flush"]
    names = {p.stem for p in bundled_recipes()}
    assert names <= set(bash_complete(script, ["knobtop", "run", ""]))
    (tmp_path / "mine.toml").write_text("")
    assert bash_complete(script, ["knobtop", "run", str(tmp_path / "mi")]) == \
        [str(tmp_path / "mine.toml")]


def test_zsh_completion_parses(tmp_path: Path) -> None:
    zsh = shutil.which("zsh")
    assert zsh, "zsh is needed (make test installs it)"
    script = completion_script("zsh", tmp_path)
    done = subprocess.run([zsh, "-n", str(script)], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert "#compdef knobtop" in script.read_text()
    text = script.read_text()
    assert "--plan" in text
    assert all(p.stem in text for p in bundled_recipes())


def test_fish_completion_completes(tmp_path: Path) -> None:
    fish = shutil.which("fish")
    assert fish, "fish is needed (make test installs it)"
    script = completion_script("fish", tmp_path)
    check = subprocess.run([fish, "--no-execute", str(script)], capture_output=True,
                           text=True, timeout=30)
    assert check.returncode == 0, check.stderr

    def offered(line: str) -> list[str]:
        program = f"source {shlex.quote(str(script))}; complete -C {shlex.quote(line)}"
        done = subprocess.run(
            [fish, "--no-config", "-c", program],
            capture_output=True, text=True, timeout=30)
        assert done.returncode == 0, done.stderr
        return [x.split("\t")[0] for x in done.stdout.splitlines()]

    assert "run" in offered("knobtop ru")
    assert "--plan" in offered("knobtop run --pl")
    assert "--plan" not in offered("knobtop tune --pl")
    assert {"md", "csv", "steps-csv"} <= set(offered("knobtop report --format "))
    assert "doublewrite" in offered("knobtop run doub")
    assert "commit-flush" in offered("knobtop tune comm")


# --------------------------------------------------------------------------- --help


def every_help() -> dict[str, str]:
    parser = build_parser()
    helps = {"knobtop": parser.format_help()}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                helps[f"knobtop {name}"] = sub.format_help()
    return helps


def test_help_texts_have_no_doubled_percent() -> None:
    helps = every_help()
    assert len(helps) > 10
    bad = {name: text.count("%%") for name, text in helps.items() if "%%" in text}
    assert not bad, f"--help prints '%%' in {bad}"


PATH_WORD = re.compile(r"(?<![\w~/.-])((?:[\w-]+/)+[\w.-]+\.(?:toml|md|py|lua|json|cnf))\b")


def test_help_texts_name_only_files_that_exist() -> None:
    named: dict[str, list[str]] = {}
    for name, text in every_help().items():
        for path in PATH_WORD.findall(" ".join(text.split())):
            named.setdefault(path, []).append(name)
    assert "experiments/doublewrite.toml" in named  # the pattern finds what it must
    missing = {p: where for p, where in named.items() if not (ROOT / p).exists()}
    assert not missing, f"--help names files that do not exist: {missing}"


@pytest.mark.parametrize("name", ["doublewrite", "buffer-pool-timeline", "aa-noise"])
def test_plan_of_bundled_recipes_runs(name: str) -> None:
    done = knobtop("run", name, "--plan")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"Plan of recipe {name} ")
    assert "warnings" in done.stdout
