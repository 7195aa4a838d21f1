"""fak.engine (see ARCHITECTURE.md for its tier and role)."""
