"""cockpit plugin: nccl."""
