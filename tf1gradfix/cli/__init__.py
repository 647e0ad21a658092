"""Command line: commands, settings, file discovery, output formats."""
