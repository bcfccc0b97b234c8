"""cockpit plugin: runbooks."""
