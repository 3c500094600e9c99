"""Jobs: which job held which GPU (attribution), per-job statistics, Slurm host lists."""
