"""The pure core: items, contributions, commits and errors. Imports only the standard library and pydantic."""
