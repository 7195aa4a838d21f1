"""fak.gateway (see ARCHITECTURE.md for its tier and role)."""
