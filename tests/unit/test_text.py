"""cockpit.text.sanitize drops every invisible format character, without the cluster
(tests/cluster/test_hostile_strings_cluster.py checks the same on real Slurm strings)."""

from __future__ import annotations

import sys
import unicodedata

import pytest

from cockpit import text
from cockpit.text import sanitize

FORMAT = [chr(cp) for cp in range(sys.maxunicode + 1) if unicodedata.category(chr(cp)) == "Cf"]
TAGS = [chr(cp) for cp in range(0xE0000, 0xE0080)]


def test_every_invisible_format_character_is_dropped():
    hidden = "a\u2060b\u061cc\u00add\U000e0041\U000e0042e\u2064f"
    assert sanitize(hidden) == "abcdef"


@pytest.mark.parametrize("chars", [FORMAT, TAGS], ids=["every Cf code point", "tags U+E0000-E007F"])
def test_each_one_is_dropped_between_letters(chars):
    assert len(chars) > 100
    kept = [f"U+{ord(ch):04X}" for ch in chars if sanitize(f"a{ch}b") != "ab"]
    assert kept == []
    assert sanitize("".join(chars)) == ""


def test_ascii_smuggled_in_tags_is_gone():
    smuggled = "job" + "".join(chr(0xE0000 + ord(c)) for c in "rm -rf /") + "\U000e007f"
    assert sanitize(smuggled) == "job"


def test_the_zero_width_joiner_is_dropped_inside_emoji_too():
    family = "\U0001f468\u200d\U0001f469\u200d\U0001f467"
    assert sanitize(family) == "\U0001f468\U0001f469\U0001f467"


@pytest.mark.parametrize("kept", [
    "日本語のジョブ café",
    "e\u0301",  # a combining accent (Mn)
    "\u2764\ufe0f",  # a variation selector (Mn)
    "no\u00a0break",  # Zs
    "wide\u3000space",
])
def test_printable_text_and_spaces_are_kept(kept):
    assert sanitize(kept) == kept
    assert sanitize(kept + "\u2060") == kept


def test_controls_private_use_and_unassigned_are_still_dropped():
    assert sanitize("a\x00b\x7fc\x85d\ue000e\U0010fffdf\U000e0080g\ud800h") == "abcdefgh"


def test_the_translate_table_stays_bounded():
    sanitize("".join(chr(cp) for cp in range(0x20000, 0x20000 + 60_000)) + "\x00")
    assert len(text._DROP_OTHER) <= 50_000
    assert sanitize("x\U00030000\u2060y\x00") == "x\U00030000y"  # past the cap: still right
