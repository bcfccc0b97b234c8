"""Moved to :mod:`cockpit.text` (a leaf utility every layer may use); this name stays
until the last importer is updated."""

from cockpit.text import *  # noqa: F401,F403
from cockpit.text import ELLIPSIS, cell_len, clean, sanitize, tail_lines, truncate  # noqa: F401
