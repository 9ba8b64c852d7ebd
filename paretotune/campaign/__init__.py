"""The campaign file: its schema, loading and validation, and resolving the names it gives (kernel, objectives,
ACFs) to objects. It runs nothing: :mod:`paretotune.runner` does."""
