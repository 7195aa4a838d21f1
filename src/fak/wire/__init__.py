"""fak.wire (see ARCHITECTURE.md for its tier and role)."""
