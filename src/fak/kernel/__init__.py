"""fak.kernel (see ARCHITECTURE.md for its tier and role)."""
