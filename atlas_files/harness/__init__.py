"""The agent harnesses: one protocol (base.py), one module per harness (registry.py)."""
