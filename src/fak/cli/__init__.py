"""The ``fak`` command (tier T4): thin verbs that build objects, then call the library."""
