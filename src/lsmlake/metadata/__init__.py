"""metadata layer of lsmlake."""
