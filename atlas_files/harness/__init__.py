"""The harness hooks: what each agent harness sends a hook and what it answers."""
