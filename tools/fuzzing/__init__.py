"""tools/fuzz_python.py's parts: the formats' targets (seeds, mutators, the code under test), the
child that runs cases and the parent that watches it (see tools/fuzz_python.py's docstring)."""
