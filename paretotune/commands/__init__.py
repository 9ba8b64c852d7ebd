"""One module per subcommand: ``configure(parser)`` and ``main(args) -> int``."""
