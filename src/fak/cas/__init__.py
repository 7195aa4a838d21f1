"""fak.cas (see ARCHITECTURE.md for its tier and role)."""
