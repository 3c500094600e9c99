"""The `wanka` subcommands, one module per family; `service.cli` adds them to the group."""
