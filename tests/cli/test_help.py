"""Every command and flag explains itself: `--help` is what a new user reads first."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

import pytest

from solver_sched.cli.main import _parser, main


def _actions(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.Action]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _actions(sub, (*path, name))
        elif not isinstance(action, argparse._HelpAction):
            yield path, action


def test_every_flag_of_every_command_has_help() -> None:
    missing = [
        f"{' '.join(path)} {'/'.join(a.option_strings) or a.dest}"
        for path, a in _actions(_parser())
        if not a.help or a.help == argparse.SUPPRESS
    ]
    assert not missing, f"flags without help text: {missing}"


def test_every_command_has_a_one_line_summary() -> None:
    sub = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    summaries = {c.dest: c.help for c in sub._choices_actions}
    assert set(summaries) == set(sub.choices)
    assert all(summaries.values()), summaries


def test_top_level_help_is_a_description_not_a_docstring(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert "`solver-sched` entry point" not in out  # the module docstring
    assert "gang scheduler for distributed AI training on Kubernetes" in out
    assert "exit codes: 0" in out
    for command in ("whatif", "run", "fleet", "demo", "simulate", "dump", "generate"):
        assert command in out
