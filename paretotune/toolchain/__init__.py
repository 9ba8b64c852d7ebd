"""ptxas 13.3 discovery and invocation, target architectures, content-hashed ACF files."""
