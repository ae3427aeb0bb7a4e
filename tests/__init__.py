"""The project's own tests (CI). Shared helpers live in tests/support."""
