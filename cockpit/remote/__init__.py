"""SSH: a connection pool, fan-out with a window, the SSH Runner, srun transport, clubak-style folding."""
