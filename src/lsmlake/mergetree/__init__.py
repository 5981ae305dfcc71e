"""mergetree layer of lsmlake."""
