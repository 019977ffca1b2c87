"""wmap command line."""
