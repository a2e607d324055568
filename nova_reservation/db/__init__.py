"""The store: nova-reservation's tables in Nova's API database."""
