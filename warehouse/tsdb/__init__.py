"""The telemetry store: gpu_metrics samples in, one relation of samples out, and its upkeep."""
