"""File formats: msgpack intermediates, fixed-width shards, JSON/JSONL indexes."""
