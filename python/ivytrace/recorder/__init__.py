"""The in-process recorder: hooks a framework and streams one trace record per call."""
