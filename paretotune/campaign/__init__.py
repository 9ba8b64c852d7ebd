"""The campaign file (schema, loading) and the loop that runs it."""
