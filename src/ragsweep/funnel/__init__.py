"""Where each lost case was lost: the first stage of the pipeline (parse, chunking, routing,
retrieval, rerank, answer) that loses its evidence, per case, per span and per depth."""
