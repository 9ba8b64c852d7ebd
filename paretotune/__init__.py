"""paretotune: multi-objective Pareto search over GPU kernel configs and PTXAS Advanced Control Files."""
__version__ = "0.1.0"
