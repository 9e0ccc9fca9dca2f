"""The protocol: one module or package per rule of the record."""
