"""fak.policy (see ARCHITECTURE.md for its tier and role)."""
