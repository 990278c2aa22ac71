"""What the user's app serves, built from the pipeline YAML alone: documents -> chunks -> index -> served lists."""
