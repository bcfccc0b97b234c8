"""Where cluster data comes from. See base.py for the Protocols."""
