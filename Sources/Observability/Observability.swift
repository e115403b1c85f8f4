// Observability — see README.md for what this module holds.
