"""The flow: one module per command, options in, an `Output` out."""
