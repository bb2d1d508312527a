"""Sessions on disk: ids, the transcript writer and reader, locks and resume."""
