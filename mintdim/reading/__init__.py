"""Reading finished outputs: datasets (reader, packed_reader, what they share in base, torch_data),
checking them (verify, verify_packed, what they share in verify_common, --source in verify_source),
describing them (summary, sample_view) and planning unit sizes from data (suggest)."""
