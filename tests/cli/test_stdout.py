"""The CLI's standard output holds its own output only: what native code writes to descriptor 1
(HiGHS's C++ debug lines broke `whatif -o json`) goes to standard error."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import os
from solver_sched.cli.stdout import own_stdout
with own_stdout():
    os.write(1, b"native noise\\n")
    print('{"ours": 1}')
print("after")
os.write(1, b"native after\\n")
"""


def test_native_writes_to_descriptor_1_go_to_stderr_while_the_cli_runs() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True
    )
    assert done.stdout == '{"ours": 1}\nafter\nnative after\n'
    assert done.stderr == "native noise\n"


def test_a_cli_started_with_descriptor_1_closed_runs() -> None:
    """Python then has no sys.stdout: nothing to keep, and no AttributeError."""
    script = "from solver_sched.cli.stdout import own_stdout\nwith own_stdout():\n    pass\n"
    done = subprocess.run(
        [sys.executable, "-c", script],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
        pass_fds=(),
        close_fds=True,
        preexec_fn=lambda: __import__("os").close(1),
    )
    assert done.returncode == 0, done.stderr
