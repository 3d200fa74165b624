"""The build's stages, one module each: validate, tokenize, plan, write, aggregate, finalize."""
