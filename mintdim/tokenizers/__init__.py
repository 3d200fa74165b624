"""Tokenizers: the kinds a config names and how they load (kinds), the single-file kinds
sentencepiece and hf_json (library), Hugging Face model directories (hfdir), the exact fast
engine for byte-level BPE (engines), MintDim's own BPE (unitoken), training and exporting it
(training, export), special tokens (specials)."""
