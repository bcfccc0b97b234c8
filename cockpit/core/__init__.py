"""Logic with no Textual: session building, poller, actions (+ audit), checks."""
