"""cockpit: a terminal cockpit for Slurm GPU clusters."""

__version__ = "0.1.0"
