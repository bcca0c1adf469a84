"""Language codes: ISO 639-1 canonical codes, the aliases users write, and the script(s) each language uses.

Every supported target is a language the default detector (py3langid 0.4.0) knows, plus its writing system,
because the script decides most cases before any detector runs (Han without kana is Chinese, Hangul is
Korean, Latin words in a Russian chain of thought are not Russian).
"""

from __future__ import annotations

import re

# Scripts whose languages do not separate words with spaces: a run of letters is measured in characters.
# Words per character, so that a mixed text weighs e.g. 10 Han characters about like 6 English words
# (Chinese averages ~1.7 characters per word, Japanese kana ~1.8, Thai-like scripts ~5 code points).
UNITS_PER_CHAR = {"han": 0.6, "kana": 0.55, "thai": 0.2, "lao": 0.2, "khmer": 0.2, "myanmar": 0.2}

# Languages written in a script other than Latin; every other supported language is written in Latin.
# Serbian is written in both. Japanese owns kana plus the Han characters of sentences that contain kana.
_NON_LATIN = {
    "cyrillic": "ru uk be bg mk sr kk ky mn tg ba tt",
    "arabic": "ar ary arz fa ur ps ug sdh uzs",
    "devanagari": "hi mr ne sa gom",
    "bengali": "bn as",
    "gurmukhi": "pa", "gujarati": "gu", "oriya": "or", "tamil": "ta", "telugu": "te", "kannada": "kn",
    "malayalam": "ml", "sinhala": "si", "thai": "th", "lao": "lo", "khmer": "km", "myanmar": "my",
    "tibetan": "dz", "georgian": "ka", "armenian": "hy", "greek": "el grc", "hebrew": "he hbo",
    "ethiopic": "am", "hangul": "ko", "han": "zh", "kana": "ja",
}
# py3langid labels that are not targets: no linguistic content, and Chinese varieties we cannot tell from "zh".
_NOT_TARGETS = {"zxx", "yue", "wuu"}

# Languages a prompt is detected among (short prompts otherwise come out as Aragonese or Nigerian Pidgin).
PROMPT_LANGUAGES = frozenset(
    "en fr de es it pt nl pl tr vi id ms ro cs sk sv da no nn fi hu hr bs sr sl et lv lt ca tl sw af eu gl sq az "
    "uz is ga cy mt ru uk bg mk be kk ar fa ur hi mr ne bn el he".split()
)

# Standard varieties the detector cannot separate on short spans; a span in one counts for the others.
# Galician is written like Portuguese (py3langid takes plain Portuguese clauses for it 3:1).
SAME_LANGUAGE = [{"ar", "ary", "arz"}, {"no", "nn"}, {"hr", "bs", "sr"}, {"id", "ms"}, {"pt", "gl"}]

_ALIASES_BY_CODE = {
    "en": "english eng", "zh": "chinese mandarin zho chi cmn 中文 汉语 漢語 普通话", "ja": "japanese jpn 日本語",
    "ko": "korean kor 한국어", "ru": "russian rus русский", "de": "german ger deu deutsch",
    "fr": "french fre fra français francais", "es": "spanish spa español espanol castellano",
    "it": "italian ita italiano", "pt": "portuguese por português portugues", "ar": "arabic ara العربية",
    "hi": "hindi hin हिन्दी हिंदी", "vi": "vietnamese vie tiếng_việt", "th": "thai tha ไทย",
    "tr": "turkish tur türkçe", "pl": "polish pol polski", "nl": "dutch flemish dut nld nederlands",
    "id": "indonesian ind bahasa_indonesia", "uk": "ukrainian ukr українська", "fa": "persian farsi per fas فارسی",
    "he": "hebrew heb עברית", "el": "greek gre ell ελληνικά", "sv": "swedish swe svenska",
    "da": "danish dan dansk", "no": "norwegian nor nb nob norsk", "fi": "finnish fin suomi",
    "cs": "czech cze ces čeština", "sk": "slovak slo slk", "hu": "hungarian hun magyar",
    "ro": "romanian rum ron română", "bg": "bulgarian bul", "sr": "serbian srp", "hr": "croatian hrv",
    "ca": "catalan cat català", "ms": "malay may msa", "bn": "bengali bangla ben", "ur": "urdu urd",
    "ta": "tamil tam", "te": "telugu tel", "mr": "marathi mar", "sw": "swahili swa", "tl": "tagalog filipino tgl fil",
}
ALIASES = {alias.replace("_", " "): code for code, names in _ALIASES_BY_CODE.items() for alias in names.split()}


def language_scripts(labels: list[str]) -> dict[str, tuple[str, ...]]:
    """The script(s) of each supported target language among a detector's labels."""
    scripts: dict[str, tuple[str, ...]] = {}
    for script, codes in _NON_LATIN.items():
        for code in codes.split():
            scripts[code] = (*scripts.get(code, ()), script)
    scripts["sr"] = ("cyrillic", "latin")
    return {code: scripts.get(code, ("latin",)) for code in labels if code not in _NOT_TARGETS}


def equivalents(code: str) -> frozenset[str]:
    """The labels that count as `code` (itself plus the varieties in `SAME_LANGUAGE`)."""
    for group in SAME_LANGUAGE:
        if code in group:
            return frozenset(group)
    return frozenset({code})


def canonical_code(name: object, supported: set[str] | frozenset[str]) -> str | None:
    """An ISO 639-1 code (or the detector's own label) for a language name or tag, None if unsupported.

    Accepts ISO 639-1 codes in any case, BCP-47 tags ("zh-CN", "zh-Hans", "pt_BR": the primary subtag
    decides), ISO 639-2/3 codes ("eng", "zho", "cmn"), English names ("english") and a few native names.

    >>> supported = {"en", "zh", "pt"}
    >>> [canonical_code(x, supported) for x in ("en", "English", "zh-Hans", "zh_CN", "pt-BR", "cmn", "klingon", 3)]
    ['en', 'en', 'zh', 'zh', 'pt', 'zh', None, None]
    """
    if not isinstance(name, str):
        return None
    key = re.sub(r"[\s_]+", " ", name.strip().lower())
    for candidate in (key, key.split("-")[0].split(" ")[0] if re.fullmatch(r"[a-z]{2,3}([- ][a-z0-9]+)*", key) else key):
        code = ALIASES.get(candidate, candidate)
        if code in supported:
            return code
    return None
