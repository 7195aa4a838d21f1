"""Agent hooks (tier T3): fak as an agent's own pre/post tool hook. ``protocol`` translates the
clients' hook shapes, ``decider`` answers one call with the kernel, ``daemon`` keeps deciders
warm per user, ``client`` is the launcher's socket side. This ``__init__`` imports nothing: the
launcher must stay light (``fak.cli.launch``)."""
