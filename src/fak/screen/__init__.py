"""fak.screen (see ARCHITECTURE.md for its tier and role)."""
