"""The build's stages, one module each: validate, tokenize, plan, write, aggregate, finalize (and train,
report); validate's parts: preflight (the checks and their record), tokenizer_facts (the tokenizer-facts
cache), to_build (which outputs to build, what changed since)."""
