"""Chat data that outlives a window: conversations (SQLite)."""
