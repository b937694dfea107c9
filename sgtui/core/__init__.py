"""Pure logic: no Textual, no asyncssh, no network. Everything here is testable without a host.

A test (tests/test_layering.py) keeps it that way.
"""
