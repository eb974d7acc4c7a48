"""Fake external services for tests."""
