"""The app's widgets: each draws plain view data (sgtui.ui.views) and knows nothing of hosts."""
