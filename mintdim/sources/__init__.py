"""Reading the user's data: JSONL chunks (jsonl), field templates (template), conversations
rendered by a model's chat template (chat). No tokenizer, no Snakemake."""
