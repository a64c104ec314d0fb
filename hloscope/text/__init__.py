"""The text layer: HLO text into the IR (the grammar's engines) and back."""
