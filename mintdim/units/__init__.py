"""Deciding where samples go, from token counts only: unit sizes and padding (padding), fixed-length
packed rows (packing)."""
