"""The ``fak`` command (tier T4): a thin layer that builds objects from Settings and calls the library."""
