"""Reading finished outputs: datasets (reader, packed_reader, torch_data), checking them (verify,
verify_packed), describing them (summary, sample_view) and planning unit sizes from data (suggest)."""
