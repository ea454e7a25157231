"""The command line (DESIGN.md §6). Each module registers its subcommands on the shared parser."""
