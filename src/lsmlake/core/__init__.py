"""core layer of lsmlake."""
