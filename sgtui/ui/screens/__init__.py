"""Screens pushed over the main one: confirmations, help, GPU detail, profiles, password."""
