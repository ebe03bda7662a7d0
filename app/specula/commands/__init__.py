"""One module per ``specula`` subcommand: ``add_arguments(parser)`` and ``run(args) -> int``."""
