"""The ``fak`` command (tier T5): thin verbs that build objects, then call the library."""
