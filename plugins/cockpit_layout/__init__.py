"""cockpit plugin: layout."""
