"""``python -m lsmlake`` runs the command line."""

from lsmlake.cli import run

run()
