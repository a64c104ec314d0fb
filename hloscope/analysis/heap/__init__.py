"""XLA's heap simulator: the temp buffers' allocation events replayed (`simulator`), then
packed into one heap by an algorithm the caller chooses (`best_fit`, `fast_merge`)."""
