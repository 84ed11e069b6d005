"""scores_sidecar."""
