"""The awaken command line, terminal approvals and the offline demo (private)."""
