"""Foundations: options, types, schema, FileIO (the only code touching storage), paths, BinaryRow, bucket hash."""
