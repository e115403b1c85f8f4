// HTTP2 — see README.md for what this module holds.
