"""Facts: names, limits and rules that need nothing but the standard library."""
