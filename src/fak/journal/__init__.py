"""fak.journal (see ARCHITECTURE.md for its tier and role)."""
