"""Where candidates are built and measured: worker processes with timeouts, restarted after crashes."""
