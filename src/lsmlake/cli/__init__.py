"""The ``lsmlake`` command line: click commands over sql/ and the table facade, loaded when one runs."""
