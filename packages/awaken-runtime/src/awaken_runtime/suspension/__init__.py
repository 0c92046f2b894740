"""Suspension: resume tickets, decisions, parked-run records (private)."""
