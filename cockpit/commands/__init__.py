"""Headless subcommands. Each module exposes ``register(subparsers)``; cli.py finds them.

A module's ``register`` adds one or more subparsers and sets ``func`` on each to
an ``async def handler(args, session) -> int`` (the exit code). Nothing here may
import Textual.
"""
