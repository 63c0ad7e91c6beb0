"""What `dump` reads: offset and time ranges of records, salvage past damage, decoders of keys and values."""
