"""fak — an agent kernel: a default-deny tool firewall and context kernel for LLM agents.

The model is an untrusted program. Every tool call it proposes is adjudicated in-process by a
capability floor; every tool result passes a write-time gate before it may enter the model's
context. See ``fak.kernel.Kernel`` for the library entry point.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
