"""The package's front doors: lazy top-level exports and the `trl-r1` dispatcher."""

import subprocess
import sys

import trl_r1
from trl_r1.cli import COMMANDS, main


def test_every_top_level_export_resolves():
    for name in trl_r1.__all__:
        assert getattr(trl_r1, name) is not None, name


def test_import_is_light():
    """`import trl_r1` must not pull in torch/TRL (the CLI's --help and reward workers stay fast)."""
    code = "import sys, trl_r1; print(any(m in sys.modules for m in ('torch', 'trl', 'transformers')))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"


def test_cli_lists_commands_and_rejects_unknown_ones(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in COMMANDS)
    assert main(["trian"]) == 2
    assert "unknown command 'trian'" in capsys.readouterr().err


def test_every_cli_command_resolves_to_a_callable():
    import importlib

    for target, _ in COMMANDS.values():
        module, _, func = target.partition(":")
        assert callable(getattr(importlib.import_module(module), func)), target
