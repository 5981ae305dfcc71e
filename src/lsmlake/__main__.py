"""``python -m lsmlake`` runs the command line."""

from lsmlake.cli.main import run

run()
