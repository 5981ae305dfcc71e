"""Scan planning: snapshot -> manifests -> live files -> splits (plain frozen dataclasses); time travel."""
