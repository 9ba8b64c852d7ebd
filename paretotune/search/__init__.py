"""Search engines behind one ask/tell interface."""
