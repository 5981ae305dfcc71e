"""The ``lsmlake`` command line."""
