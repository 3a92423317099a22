"""The command line: `latency-gate probe | merge | quick | demo | demo-server`.

`main` is the click group (cli/app.py); importing the command modules registers their commands.
`probe`'s own options and the headings of its `--help` are declared in cli/probe_options.py.
"""

from latency_gate.cli import demo, probe
from latency_gate.cli.app import main
from latency_gate.cli.demo import DEMO_DESCRIPTIONS

__all__ = ["DEMO_DESCRIPTIONS", "demo", "main", "probe"]
