"""Subcommands of `lowprec`; see app.cli."""
