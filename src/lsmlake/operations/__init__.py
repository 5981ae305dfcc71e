"""operations layer of lsmlake."""
