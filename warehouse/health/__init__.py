"""Cluster health: findings over the health dynamic tables, and judging them on simulated faults."""
