"""The Discord edge of GPU Garden (discord.py): translation in ``events``, rendering in ``render``,
application commands in ``commands``, feedback buttons in ``feedback``, the client in ``bot``.

``serve(settings, service, health)`` is what ``adapters.runner`` runs; ``sync_commands`` is the
``gpu-garden discord sync-commands`` step.
"""

from .bot import GardenClient, create_bot, serve, sync_commands

__all__ = ["GardenClient", "create_bot", "serve", "sync_commands"]
