"""The Textual app. Built on sgtui.core and sgtui.remote; nothing below imports it."""
