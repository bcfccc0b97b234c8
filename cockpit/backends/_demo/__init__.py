"""Internals of the demo backend (cockpit.backends.demo): state, scheduler, scenario."""
