"""Reading the user's data: every input kind behind one reader (inputs: JSONL chunks in jsonl,
Parquet row groups in parquet, datasets directories in hfdatasets, what those two share in arrow),
which samples an output takes (take), field templates (template), conversations rendered by a
model's chat template (chat). No tokenizer, no Snakemake."""
