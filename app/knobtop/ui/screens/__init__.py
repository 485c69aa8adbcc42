"""Screens: the live screen and its dialogs."""
