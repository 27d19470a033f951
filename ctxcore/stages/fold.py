"""Fold text to what a model would read as structure.

A model reads ``＜/evi\u200bdence＞`` or a Cyrillic ``[Ѕ1]`` as the plain ``</evidence>`` and
``[S1]``, so the decision "does this forge a fence or a label?" is made on folded text. The fold
works one character at a time, so every folded character points back at the character it came
from and a forgery found in the folded text can be defused in the original (:func:`fold_map`).

Per character: drop the invisible ones (Unicode format characters, category Cf — zero-width
spaces and joiners, the soft hyphen, bidi controls — and the other default-ignorable code points:
variation selectors, fillers, the combining grapheme joiner); otherwise take the NFKC form
(full-width and other compatibility forms become plain) and map common look-alikes of Latin
letters and of ``< / [ ] |`` (Cyrillic, Greek, Armenian, small capitals) to the plain character.
Characters that fold to themselves stay: accents, CJK and emoji are untouched.
"""

from __future__ import annotations

import unicodedata

# Look-alikes that NFKC leaves alone, by what a reader takes them for. Deliberately absent: the
# marks neutralise writes (‹ U+2039 and the parentheses), so defused text folds to itself.
_LOOKALIKES = {
    "a": "аɑα", "c": "сϲᴄ", "d": "ԁᴅ", "e": "еҽᴇ", "h": "һհʜ", "i": "іıɩιӏɪ", "j": "јϳ", "k": "κᴋ",
    "l": "ʟ", "m": "ᴍ", "n": "ոɴ", "o": "оοօᴏσ", "p": "рρᴘ", "q": "ԛ", "r": "гʀ", "s": "ѕꜱ", "t": "ᴛ",
    "u": "υսᴜ", "v": "νѵᴠ", "w": "ԝᴡ", "x": "хχ", "y": "уүʏ",
    "A": "АΑ", "B": "ВΒ", "C": "СϹ", "D": "Ꭰ", "E": "ЕΕ", "H": "НΗ", "I": "ІΙӀ", "J": "ЈͿ", "K": "КΚ",
    "M": "МΜ", "N": "Ν", "O": "ОΟՕ", "P": "РΡ", "Q": "Ԛ", "S": "ЅՏ", "T": "ТΤ", "V": "Ѵ", "W": "Ԝ",
    "X": "ХΧ", "Y": "УΥҮ", "Z": "Ζ",
    "<": "˂ᐸ⟨〈", ">": "˃ᐳ⟩〉", "/": "∕⁄⧸╱", "[": "【〔⟦⁅", "]": "】〕⟧⁆", "|": "ǀ∣",
}
_PLAIN = {c: plain for plain, looks in _LOOKALIKES.items() for c in looks}

# default-ignorable code points that are not Cf (those are dropped by category)
_IGNORABLE = frozenset(map(chr, [0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x180B, 0x180C, 0x180D, 0x180F,
                                 0x3164, 0xFFA0, *range(0xFE00, 0xFE10), *range(0xE0100, 0xE01F0)]))


class _Table(dict):
    """str.translate table filled on first sight of each character."""

    def __missing__(self, code: int) -> str:
        self[code] = out = fold_char(chr(code))
        return out


def fold_char(ch: str) -> str:
    """One character, folded (possibly to nothing, or to several characters).

    >>> [fold_char(c) for c in "\u200b＜Ѕé"]
    ['', '<', 'S', 'é']
    """
    if ch.isascii():
        return ch
    if ch in _IGNORABLE or unicodedata.category(ch) == "Cf":
        return ""
    if ch in _PLAIN:
        return _PLAIN[ch]
    out = unicodedata.normalize("NFKC", ch)
    return "".join(_PLAIN.get(c, c) for c in out) if out != ch else ch


_TABLE = _Table()


def fold(text: str) -> str:
    """The text as structure reads it.

    >>> fold("＜/evi\u00addence＞ [Ѕ1] ｓｙｓｔｅｍ: café 東京 👍")
    '</evidence> [S1] system: café 東京 👍'
    """
    return text if text.isascii() else text.translate(_TABLE)


def fold_map(text: str) -> tuple[str, list[int]]:
    """The folded text and, for each of its characters, the index in ``text`` it came from.

    >>> fold_map("a\u200b＜b")
    ('a<b', [0, 2, 3])
    """
    if text.isascii():
        return text, list(range(len(text)))
    parts, origin = [], []
    for i, ch in enumerate(text):
        out = _TABLE[ord(ch)]
        parts.append(out)
        origin.extend([i] * len(out))
    return "".join(parts), origin

# Every character whose fold holds "<" or "[", the first character of a fence, a label and a chat
# special token: text without one of them can forge none of the three (tests rescan all of Unicode).
OPENERS = ("<[\u02c2\u1438\u2045\u2329\u27e6\u27e8\u3008\u3010\u3014\ufe39\ufe3b\ufe3f\ufe47\ufe5d\ufe64\uff1c"
           "\uff3b\U0001f12a\U0001f240\U0001f241\U0001f242\U0001f243\U0001f244\U0001f245\U0001f246\U0001f247"
           "\U0001f248")
