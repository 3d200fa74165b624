"""An exact faster engine for byte-level BPE `tokenizer.json` files: tiktoken.

Llama-3, Qwen2/3, DeepSeek and similar models ship byte-level BPE tokenizer.json files
whose vocabularies came from tiktoken. tiktoken's Rust core encodes the same
texts several times faster than `tokenizers` (docs/performance.md). It is used
when, and only when, the file itself shows that it gives the library's ids:

- model: BPE without byte fallback, dropout, subword prefix or word suffix;
  every one of the 256 byte symbols in the vocabulary;
- normalizer: none, an empty Sequence, or NFC;
- pre-tokenizer: ByteLevel(add_prefix_space=false, use_regex=true) (GPT-2's
  pattern), or Sequence[Split(Regex, Isolated, not inverted),
  ByteLevel(add_prefix_space=false, use_regex=false)]: the Split regex becomes
  tiktoken's pattern (tiktoken, like the Split, drops nothing: the patterns
  accepted match every character; checked by the tests on every code point);
  or DeepSeek's three Splits (digits, CJK runs, the rest) + that ByteLevel,
  rewritten as one pattern (_deepseek_pattern says why it is the same);
- added tokens: none with lstrip, rstrip, single_word or normalized set (with
  no normalizer, normalized is allowed when no such token can start before an
  overlapping token without it: _added_tokens), and none a prefix of another
  (tiktoken picks the first alternative of its special-token regex;
  `tokenizers` the longest match: the same only then);
- merges vs ranks (the check below): tiktoken merges, in a word, the adjacent
  pair whose concatenation has the lowest rank (= token id); `tokenizers`
  merges the adjacent pair listed first in `merges`. They agree when every
  token tiktoken can build has, as its last merge on its own bytes, a pair
  that `merges` lists, and these pairs are listed in token-id order. Tokens
  BPE can never build are never merged into by either engine (below); they
  are emitted only for a word equal to them, by tiktoken always and by the
  library only with ignore_merges=true: with ignore_merges=false they get no
  rank.

Why that check suffices: parts only ever merge, so when two adjacent parts
x, y exist, the merges made inside their span are exactly those of tiktoken's
BPE on the bytes of x+y alone; if x+y is a token, that BPE's last merge is
(x, y). So every pair either engine can merge is such a "last merge" pair,
listed (checked), and both engines pick the same one: lowest id = first
listed (checked), leftmost on a tie in both. The whole-word shortcut of
tiktoken then gives what BPE gives for a buildable token.

Added tokens are matched in the text as `tokenizers` matches them with
add_special_tokens=False (special or not), by tiktoken's special-token
handling; the text between them is pre-tokenized and merged segment by
segment in both. With an NFC normalizer `tokenizers` normalizes each segment
between added tokens: a text that the file's own normalizer leaves unchanged
(every ASCII text, and checked with that normalizer otherwise) has every
segment unchanged too, so tiktoken encodes it as it is; any other text is
encoded by the library.

Offsets (loss masks) follow from the ids, with no second encode (TiktokenEncoder.offsets).
`tokenizers` gives each token the span of the original characters its bytes came from: ByteLevel maps
every byte of a character to that character's whole range, and a token's span is the union of its
bytes' ranges. So a token starts at the character holding its first byte and ends after the character
holding its last byte (two tokens that split a character both get that character), an added token
matched in the text has the span of its match, and a token's bytes are its vocabulary entry's bytes
(tiktoken's pieces never cross the pre-tokenizer's splits, and the bytes of a text's tokens, in order,
are the text's UTF-8 bytes: checked per text). A text the NFC normalizer changes is encoded by the
library, offsets and all. This holds when the post-processor leaves offsets as encoded (none,
ByteLevel without trim_offsets, TemplateProcessing, which adds nothing with add_special_tokens=False);
a file whose post-processor trims them keeps the library's offsets (_offsets_reason).
Conversation masks need no character per token (TiktokenEncoder.byte_starts): a token starts in
character c exactly when its first byte lies in c's bytes, so only the spans' ends become bytes.
"""

from __future__ import annotations

import array
import json
import os

TIKTOKEN = "tiktoken"
LIBRARY = "tokenizers"

# tokenizers' ByteLevel(use_regex=true) pattern (GPT-2's)
GPT2_PATTERN = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's table: each byte -> the printable character byte-level BPE vocabularies store it as."""
    bs = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("¡"), ord("¬") + 1))
        + list(range(ord("®"), ord("ÿ") + 1))
    )
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


class NotEligible(ValueError):
    """The file is not one tiktoken encodes exactly like `tokenizers` (the message says why)."""


# DeepSeek (V2/V3/R1) pre-tokenizes with three Isolated Splits in sequence, then ByteLevel: digits
# (groups of up to 3), then runs of CJK ideographs and kana, then the rest by a Llama-like regex.
PUNCT_WORD = (
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+"  # as the file spells it (\r, \n: the characters)
)
DEEPSEEK_SPLITS = (
    r"\p{N}{1,3}",
    "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
    PUNCT_WORD
    + "|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
)


def _deepseek_pattern() -> str:
    r"""The three Splits as one tiktoken pattern, piece for piece. Every \p{N} character ends up in a
    digit piece and every character of the CJK class C (never \p{N}) in a maximal C run, so the third
    Split sees: C runs, and maximal runs of the other characters (D). Its regex on a piece equals
    the regex restricted to the piece's class (each class intersected with it; `(?!\S)` at a piece's
    end: not followed by a non-space of the same class), and what it leaves unmatched inside a
    piece (e.g. a control character not before a letter) is a piece too: the last alternative of
    each class, runs of characters where no other alternative of that class starts. No alternative
    of one class (digits, C, D) can start on another's characters, so their order is free.
    Identity with the library: tests/test_engine.py (every code point in contexts, adversarial
    strings, the gettext catalogues, the ShareGPT pairs)."""
    c = "\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff"
    third_c = rf"[[{c}]--[\p{{L}}\p{{P}}\p{{S}}]]?[[{c}]&&[\p{{L}}\p{{M}}]]+|[[{c}]&&[\p{{P}}\p{{S}}]]+"
    third_d = (
        PUNCT_WORD + rf"|[^\r\n\p{{L}}\p{{P}}\p{{S}}\p{{N}}{c}]?[[\p{{L}}\p{{M}}]--[{c}]]+"
        rf"| ?[[\p{{P}}\p{{S}}]--[{c}]]+[\r\n]*"
        r"|\s*[\r\n]+"
        rf"|\s+(?![^\s\p{{N}}{c}])"
        r"|\s+"
    )
    # most text is D: its alternatives first (-24% CPU against digits, C, D on ShareGPT, same ids)
    return (
        rf"{third_d}|\p{{N}}{{1,3}}|{third_c}|(?:(?!{third_c})[{c}])+"
        rf"|(?:(?!{third_d})[^\p{{N}}{c}])+"
    )


def _pattern(pre) -> str:
    if not isinstance(pre, dict):
        raise NotEligible("no pre-tokenizer")
    if pre.get("type") == "ByteLevel":
        if pre.get("add_prefix_space") or not pre.get("use_regex", True):
            raise NotEligible("ByteLevel pre-tokenizer with add_prefix_space or without its regex")
        return GPT2_PATTERN
    steps = (pre.get("pretokenizers") or []) if pre.get("type") == "Sequence" else []
    if len(steps) not in (2, len(DEEPSEEK_SPLITS) + 1):
        raise NotEligible(f"pre-tokenizer {pre.get('type')} is not Split + ByteLevel or ByteLevel")
    *splits, byte_level = steps
    if any(split.get("type") != "Split" for split in splits) or byte_level.get("type") != "ByteLevel":
        raise NotEligible("pre-tokenizer sequence is not Split + ByteLevel")
    if byte_level.get("add_prefix_space") or byte_level.get("use_regex", True):
        raise NotEligible("ByteLevel after Split with add_prefix_space or its own regex")
    regexes = tuple((split.get("pattern") or {}).get("Regex") for split in splits)
    if None in regexes or any(split.get("behavior") != "Isolated" or split.get("invert") for split in splits):
        raise NotEligible("Split is not an isolated, non-inverted regex split")
    if len(regexes) == 1:
        return regexes[0]
    if regexes != DEEPSEEK_SPLITS:
        raise NotEligible("pre-tokenizer sequence is not Split + ByteLevel (three Splits: only DeepSeek's)")
    return _deepseek_pattern()


def _normalizer(norm) -> str | None:
    """None (identity) or "NFC"; anything else is refused."""
    if norm is None:
        return None
    kind = norm.get("type")
    if kind == "NFC":
        return "NFC"
    if kind == "Sequence":
        inner = [_normalizer(n) for n in norm.get("normalizers") or []]
        inner = [n for n in inner if n]
        if len(inner) <= 1:
            return inner[0] if inner else None
    raise NotEligible(f"normalizer {kind}")


# post-processors that leave a single text's offsets as encoded, with add_special_tokens=False
_OFFSET_KEEPING = ("TemplateProcessing",)


def _offsets_reason(post) -> str:
    """ "" when the file's post-processor leaves offsets as the encode gives them (the engine's offsets
    are then the library's), else why not: ByteLevel or RobertaProcessing with trim_offsets move a
    token's start past its leading spaces; anything else is not vouched for."""
    if post is None:
        return ""
    kind = post.get("type") if isinstance(post, dict) else None
    if kind == "Sequence":
        return next(filter(None, map(_offsets_reason, post.get("processors") or [])), "")
    if kind == "ByteLevel" and not post.get("trim_offsets"):
        return ""
    if kind in _OFFSET_KEEPING:
        return ""
    return f"post-processor {kind}" + (" with trim_offsets" if post.get("trim_offsets") else "")


def _model_checks(model: dict) -> None:
    if model.get("type") != "BPE":
        raise NotEligible(f"model {model.get('type')}, not BPE")
    if model.get("byte_fallback"):
        raise NotEligible("byte_fallback")
    if model.get("dropout"):
        raise NotEligible("dropout")
    if model.get("continuing_subword_prefix") or model.get("end_of_word_suffix"):
        raise NotEligible("continuing_subword_prefix / end_of_word_suffix")


def _added_tokens(added: list, normalizer: str | None) -> dict[str, int]:
    """normalizer None (identity): `normalized` tokens are allowed when none can start before an
    overlapping token without the flag (_no_overlap). The library matches the unflagged tokens first,
    then the flagged ones in what is left (the normalizer changing nothing); tiktoken matches all at
    once, leftmost first: the same occurrences then."""
    specials, flagged = {}, []
    for a in added:
        if a.get("lstrip") or a.get("rstrip") or a.get("single_word") or (a.get("normalized") and normalizer):
            raise NotEligible(f"added token {a.get('content')!r} has lstrip/rstrip/single_word/normalized")
        if not a.get("content"):
            raise NotEligible("an empty added token")
        specials[a["content"]] = int(a["id"])
        if a.get("normalized"):
            flagged.append(a["content"])
    contents = sorted(specials)
    for x, y in zip(contents, contents[1:]):  # sorted: a prefix sorts right before some extension of it
        if y.startswith(x):
            raise NotEligible(f"added token {x!r} is a prefix of {y!r}")
    if flagged:
        _no_overlap(flagged, [t for t in specials if t not in set(flagged)])
    return specials


def _no_overlap(flagged: list[str], plain: list[str]) -> None:
    """NotEligible when an occurrence of a flagged token x could start before an overlapping occurrence
    of a plain token y: x holding y, or a proper suffix of x equal to a proper prefix of y. (The other
    overlaps start with y, which both engines then take: the library in its first pass, tiktoken as
    the leftmost; no plain occurrence can start inside a flagged one taken, so the rest follows.)"""
    prefixes = {y[:k] for y in plain for k in range(1, len(y))}
    for x in flagged:
        if any(x[k:] in prefixes for k in range(1, len(x))) or any(y in x for y in plain):
            raise NotEligible(f"normalized added token {x!r} can overlap a later non-normalized one")


def _split_merge(m) -> tuple[str, str]:
    if isinstance(m, str):
        a, sep, b = m.partition(" ")
        if not sep:
            raise NotEligible(f"merge {m!r} is not two symbols")
        return a, b
    return m[0], m[1]


def buildable_ranks(vocab: dict[str, int], merges: list, ignore_merges: bool) -> dict[str, int]:
    """The vocabulary (as byte-level strings) tiktoken gets as ranks, after the merges-vs-ranks check
    of the module docstring. ~1.5 s of Python for a 128k-151k vocabulary."""
    table = set(bytes_to_unicode().values())
    missing = table.difference(vocab)
    if missing:
        raise NotEligible(f"{len(missing)} of the 256 byte symbols are not in the vocabulary")
    # tokens holding a character that is no byte symbol can never be met in byte-level text
    ranks = {t: i for t, i in vocab.items() if all(c in table for c in t)}
    if len(set(ranks.values())) != len(ranks):
        raise NotEligible("two tokens share an id")
    first_listed: dict[tuple[str, str], int] = {}
    for index, m in enumerate(merges):
        first_listed.setdefault(_split_merge(m), index)
    get = ranks.get
    NONE = 1 << 62
    last_merge_index: dict[int, int] = {}  # id -> index in merges of its last merge
    unbuildable = []
    for t, r in ranks.items():
        if len(t) == 1:
            continue
        parts = list(t)  # tiktoken's byte_pair_merge on t's bytes alone: lowest rank first, leftmost on ties
        pair = [get(a + b, NONE) for a, b in zip(parts, parts[1:])]
        last = None
        while pair:
            best = min(pair)
            if best == NONE:
                break
            i = pair.index(best)
            last = (parts[i], parts[i + 1])
            parts[i] += parts.pop(i + 1)
            del pair[i]
            if i:
                pair[i - 1] = get(parts[i - 1] + parts[i], NONE)
            if i < len(pair):
                pair[i] = get(parts[i] + parts[i + 1], NONE)
        if len(parts) != 1:
            unbuildable.append(t)
            continue
        index = first_listed.get(last)
        if index is None:
            raise NotEligible(f"tiktoken builds {t!r} from {last!r}, a pair merges does not list")
        last_merge_index[r] = index
    previous = -1
    for r in sorted(last_merge_index):
        if last_merge_index[r] <= previous:
            raise NotEligible("merges are not listed in the order of their tokens' ids")
        previous = last_merge_index[r]
    if not ignore_merges:  # the library's BPE cannot emit them; tiktoken would, for a whole word
        for t in unbuildable:
            del ranks[t]
    return ranks


class TiktokenEncoder:
    """Encodes like the file's `tokenizers` Tokenizer with add_special_tokens=False: ids, and with
    offsets() each token's character span (when offsets_reason is "": the post-processor
    leaves offsets alone).

    library: a no-argument callable returning the file's `tokenizers` Tokenizer, called only when
    a text needs it (NFC normalizer and a text it changes)."""

    name = TIKTOKEN

    def __init__(
        self,
        mergeable: dict[bytes, int],
        pattern: str,
        specials: dict[str, int],
        normalizer: str | None,
        library=None,
        threads: int = 1,
        offsets_reason: str = "post-processor not checked",
    ):
        import tiktoken

        self._core = tiktoken.Encoding(
            "mintdim", pat_str=pattern, mergeable_ranks=mergeable, special_tokens=specials
        )._core_bpe
        self.offsets_reason = offsets_reason
        self._widths = None  # _byte_lengths as a numpy array, on first use
        # each id's byte length (an added token: its text's UTF-8), for offsets without a second encode
        size = max([*mergeable.values(), *specials.values(), -1]) + 1
        self._byte_lengths = array.array("I", bytes(4 * size))
        for token, i in mergeable.items():
            self._byte_lengths[i] = len(token)
        for text, i in specials.items():
            self._byte_lengths[i] = len(text.encode("utf-8"))
        self._allowed = set(specials)
        self._normalize = None
        if normalizer == "NFC":
            from tokenizers.normalizers import NFC  # the library's own NFC (its Unicode version)

            self._normalize = NFC().normalize_str
        self._library = library
        self.threads, self._pool = 1, None
        self.set_threads(threads)

    def set_threads(self, threads: int) -> None:
        """The batch's slices run on a pool of `threads` (a
        ThreadPoolExecutor starts its threads on first use)."""
        self.threads = max(1, int(threads))
        if self._pool is not None:
            self._pool.shutdown(wait=False)
        self._pool = None
        if self.threads > 1:
            from concurrent.futures import ThreadPoolExecutor

            self._pool = ThreadPoolExecutor(self.threads)

    def _encode_list(self, texts: list[str], offsets: bool = False) -> list:
        """Each text's ids; a text the normalizer changes is the library's: its ids, or with `offsets`
        its Encoding (ids and offsets)."""
        encode, allowed, normalize = self._core.encode, self._allowed, self._normalize
        if normalize is None:
            return [encode(t, allowed) for t in texts]
        out: list = []
        changed = []  # texts the normalizer changes: the library encodes them (rare)
        for t in texts:
            if t.isascii() or normalize(t) == t:
                out.append(encode(t, allowed))
            else:
                changed.append(len(out))
                out.append(None)
        if changed:
            library = self._library()
            batch = library.encode_batch if offsets else library.encode_batch_fast
            encs = batch([texts[i] for i in changed], add_special_tokens=False)
            for i, e in zip(changed, encs):
                out[i] = e if offsets else e.ids
        return out

    def encode_ids(self, texts: list[str], offsets: bool = False) -> list:
        """tiktoken's Rust encode releases the GIL: `threads` slices of the batch run in parallel.
        offsets: the library's Encoding, not ids, for a text the normalizer changes (_encode_list)."""
        if self._pool is None or len(texts) < 2 * self.threads:
            return self._encode_list(texts, offsets)
        step = -(-len(texts) // self.threads)
        slices = [texts[i : i + step] for i in range(0, len(texts), step)]
        parts = self._pool.map(self._encode_list, slices, [offsets] * len(slices))
        return [ids for part in parts for ids in part]

    def _token_widths(self, encoded: list, flat, lengths):
        """(each token's UTF-8 byte length, 0 for a text the library encoded; those texts; each text's
        first token in `flat`)."""
        import numpy as np

        if self._widths is None:
            self._widths = np.frombuffer(self._byte_lengths, dtype=np.uint32).astype(np.int64)
        library = [k for k, e in enumerate(encoded) if not isinstance(e, list)]  # the library's Encodings
        widths = self._widths[flat]
        firsts = np.cumsum(lengths) - lengths
        for k in library:  # their spans are the library's: none of their bytes are counted here
            widths[firsts[k] : firsts[k] + lengths[k]] = 0
        return widths, library, firsts

    def offsets(self, texts: list[str], encoded: list, flat, lengths):
        """(starts, ends): each token's character span in its text, as the library's `encode_batch` gives
        it (module docstring), from the ids and their byte lengths. encoded: encode_ids(texts, offsets=True);
        flat, lengths: its ids flattened."""
        import numpy as np

        widths, library, firsts = self._token_widths(encoded, flat, lengths)
        starts, ends = char_spans(texts, widths, lengths, library)
        for k in library:
            spans = np.asarray(encoded[k].offsets, dtype=np.int64).reshape(-1, 2)
            at = slice(int(firsts[k]), int(firsts[k]) + len(spans))
            starts[at], ends[at] = spans[:, 0], spans[:, 1]
        return starts, ends

    def byte_starts(self, texts: list[str], encoded: list, flat, lengths):
        """(starts, bases): the texts laid end to end in UTF-8, each token's first byte there (ascending)
        and each text's (one more entry: the end). A token starts in character c of its text exactly when
        its first byte lies in [bases[k] + utf8(c), bases[k] + utf8(c + 1)): loss masks compare bytes,
        with no character offset per token. A text the library encoded: its Encoding's start characters,
        in bytes. encoded, flat, lengths: as offsets(); ValueError as char_spans."""
        import numpy as np

        widths, library, firsts = self._token_widths(encoded, flat, lengths)
        ends_at = np.zeros(len(flat) + 1, dtype=np.int64)
        np.cumsum(widths, out=ends_at[1:])
        bases, counted = text_bases(texts, library)
        if not np.array_equal(ends_at[firsts + lengths] - ends_at[firsts], counted):  # never expected
            raise ValueError("engine offsets: the tokens' bytes do not add up to the text")
        starts = ends_at[:-1]
        if library:  # the bytes of the library's texts before each text, then their own tokens
            starts = starts + np.repeat(bases[:-1] - ends_at[firsts], lengths)
            for k in library:
                chars = [a for a, _ in encoded[k].offsets]
                at = utf8_offsets(texts[k], chars)
                starts[firsts[k] : firsts[k] + lengths[k]] = [bases[k] + at[c] for c in chars]
        return starts, bases


def text_bases(texts: list[str], skip=()):
    """(where each text starts in the texts' UTF-8 bytes laid end to end, one more entry: the end; each
    text's bytes, 0 for the texts in `skip`)."""
    import numpy as np

    sizes = np.fromiter(
        (len(t) if t.isascii() else len(t.encode("utf-8")) for t in texts), np.int64, len(texts)
    )
    bases = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum(sizes, out=bases[1:])
    sizes[list(skip)] = 0
    return bases, sizes


def utf8_offsets(text: str, chars) -> dict[int, int]:
    """{character offset: its UTF-8 byte offset in text} for the offsets `chars` (len(text) included):
    each character encoded once."""
    found, pos, at = {}, 0, 0
    for c in sorted(set(chars)):
        at += len(text[pos:c].encode("utf-8"))
        found[c], pos = at, c
    return found


def char_spans(texts: list[str], widths, lengths, skip=()):
    """Character spans (starts, ends) of consecutive tokens of `texts` whose UTF-8 byte lengths are
    `widths` (lengths: tokens per text): a token starts at the character holding its first byte and
    ends after the one holding its last. ValueError when a text's tokens do not spell its bytes (the
    texts in `skip`, whose widths are 0, aside: their spans are garbage)."""
    import numpy as np

    wide = [k for k, t in enumerate(texts) if not t.isascii()]  # bytes and characters differ only there
    utf8 = {k: texts[k].encode("utf-8") for k in wide}
    text_bytes = np.fromiter(
        (len(utf8[k]) if k in utf8 else len(t) for k, t in enumerate(texts)), dtype=np.int64, count=len(texts)
    )
    counted = text_bytes.copy()
    counted[list(skip)] = 0
    ends_at = np.zeros(len(widths) + 1, dtype=np.int64)
    np.cumsum(widths, out=ends_at[1:])
    firsts = np.cumsum(lengths) - lengths
    if not np.array_equal(ends_at[firsts + lengths] - ends_at[firsts], counted):  # never expected
        raise ValueError("engine offsets: the tokens' bytes do not add up to the text")
    # each token's first byte in its text: an ASCII text's characters are its bytes
    starts = ends_at[:-1] - np.repeat(ends_at[firsts], lengths)
    ends = starts + widths
    if wide:
        wide_lengths = lengths[wide]
        at = np.repeat(firsts[wide] - (np.cumsum(wide_lengths) - wide_lengths), wide_lengths)
        at += np.arange(len(at))  # the tokens of the texts that are not ASCII
        # their bytes concatenated: a byte's character there is its index less the continuation bytes
        # (10xxxxxx) up to it; less the characters of the texts before, its character in its text
        data = np.frombuffer(b"".join(utf8[k] for k in wide), dtype=np.uint8)
        continued = np.cumsum((data & 0xC0) == 0x80, dtype=np.int32 if len(data) < 2**31 else np.int64)
        wide_bytes = text_bytes[wide]
        wide_chars = np.fromiter((len(texts[k]) for k in wide), dtype=np.int64, count=len(wide))
        byte_base = np.repeat(np.cumsum(wide_bytes) - wide_bytes, wide_lengths)
        char_base = np.repeat(np.cumsum(wide_chars) - wide_chars, wide_lengths)
        first = starts[at] + byte_base
        last = np.maximum(first + widths[at] - 1, 0)  # a skipped text's tokens (width 0) at the very start
        starts[at] = first - continued[first] - char_base
        ends[at] = last - continued[last] + 1 - char_base
    return starts, ends


def _own_library(path: str | None, tokenizer_json: str | None):
    """A loader of the library's Tokenizer for the texts the engine hands back (NFC-changed ones)."""
    import threading

    lock, loaded = threading.Lock(), []

    def get():
        with lock:
            if not loaded:
                from tokenizers import Tokenizer

                tok = (
                    Tokenizer.from_str(tokenizer_json)
                    if tokenizer_json is not None
                    else Tokenizer.from_file(path)
                )
                tok.no_padding()
                tok.no_truncation()
                loaded.append(tok)
        return loaded[0]

    return get


CACHE_VERSION = 3  # 2: entries keyed by content + versions, in a checksummed envelope; 3: offsets_reason
CACHE_ENV = "MINTDIM_CACHE_DIR"


def cache_dir(work_dir: str) -> str:
    """Where pre-flight leaves the checked tables for a build's tokenize jobs (the work dir's copy)."""
    return os.path.join(work_dir, "engines")


def user_cache_dir() -> str | None:
    """MintDim's cache of facts that depend only on a tokenizer file's content, shared by every work
    directory: $MINTDIM_CACHE_DIR, else $XDG_CACHE_HOME/mintdim, else ~/.cache/mintdim (None: no home)."""
    given = os.environ.get(CACHE_ENV)
    if given:
        return os.path.abspath(given)
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and os.path.isabs(xdg):
        return os.path.join(xdg, "mintdim")
    home = os.path.expanduser("~")
    return os.path.join(home, ".cache", "mintdim") if home and home != "~" else None


def cache_dirs(work_dir: str) -> list[str]:
    """Where checked tables are looked for and left: the work dir's copy, then the user cache."""
    user = user_cache_dir()
    return [cache_dir(work_dir)] + ([os.path.join(user, "engines")] if user else [])


_DIGESTS: dict[tuple, str] = {}


def _digest(path: str | None, text: str | None) -> str:
    """SHA-256 of the file's bytes (or of `text`), remembered in this process per path, inode, size,
    mtime and ctime (a write changes ctime, which no one can set back: pre-flight asks for it up to
    three times, for the facts' key, the tables' key and the encoder)."""
    import hashlib

    h = hashlib.sha256()
    if text is not None:
        h.update(text.encode("utf-8"))
        return h.hexdigest()
    st = os.stat(path)
    key = (os.path.abspath(path), st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    if key not in _DIGESTS:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        _DIGESTS[key] = h.hexdigest()
    return _DIGESTS[key]


def file_digest(path: str) -> str:
    return _digest(path, None)


def read_entry(path: str) -> bytes | None:
    """A cache entry's body, or None when absent, unreadable or not what was written (its SHA-256,
    stored in front of it, differs: a torn or corrupted file is ignored, never trusted)."""
    import hashlib

    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    body = data[32:]
    return body if len(data) >= 32 and hashlib.sha256(body).digest() == data[:32] else None


def write_entry(path: str, body: bytes) -> bool:
    """Write a cache entry atomically (a temporary file renamed into place); False when it cannot be
    written (a read-only or full cache: the work is simply redone next time)."""
    import hashlib

    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(tmp, "wb") as f:
            f.write(hashlib.sha256(body).digest() + body)
        os.replace(tmp, path)
        return True
    except OSError:
        try:
            os.remove(tmp)
        except OSError:
            pass
        return False


def _tiktoken_version() -> str:
    import tiktoken

    return getattr(tiktoken, "__version__", "?")


def ranks_name(content: str) -> str:
    """The checked tables' file name: the tokenizer's SHA-256, MintDim's and tiktoken's versions."""
    import hashlib

    from .. import __version__

    key = f"{content}|mintdim {__version__}|tiktoken {_tiktoken_version()}|{CACHE_VERSION}"
    return f"tiktoken-{hashlib.sha256(key.encode('utf-8')).hexdigest()}.msgpack"


def ranks_cached(path: str, dirs: list[str]) -> bool:
    """Are the checked tables of the tokenizer.json at `path` in one of `dirs` (their checksum intact;
    the reader checks the rest)?"""
    try:
        name = ranks_name(file_digest(path))
    except (OSError, ImportError):
        return False
    return any(read_entry(os.path.join(d, name)) is not None for d in dirs)


def _read_cache(cache_file: str, content: str):
    import msgpack

    body = read_entry(cache_file)
    if body is None:
        return None
    import numpy as np  # only for a cache that exists: a model that is not eligible never pays it (0.13 s)

    try:
        data = msgpack.unpackb(body, raw=False)
        if (
            not isinstance(data, dict)
            or data.get("version") != CACHE_VERSION
            or data.get("content") != content
        ):
            return None
        ends = np.cumsum(np.frombuffer(data["lengths"], dtype=np.uint16), dtype=np.int64).tolist()
        ids = np.frombuffer(data["ids"], dtype=np.uint32).tolist()
        blob = data["tokens"]
        if len(ends) != len(ids) or (ends[-1] if ends else 0) != len(blob):
            return None
        starts = [0] + ends[:-1]
        return (
            {blob[a:b]: i for a, b, i in zip(starts, ends, ids)},
            data["pattern"],
            data["specials"],
            data["normalizer"],
            str(data["offsets_reason"]),
        )
    except (ValueError, TypeError, KeyError, msgpack.UnpackException):
        return None


def _write_cache(
    cache_file: str,
    content: str,
    mergeable: dict[bytes, int],
    pattern,
    specials,
    normalizer,
    offsets_reason: str,
) -> None:
    import msgpack
    import numpy as np

    tokens = list(mergeable)
    data = {
        "version": CACHE_VERSION,
        "content": content,
        "pattern": pattern,
        "specials": specials,
        "normalizer": normalizer,
        "offsets_reason": offsets_reason,
        "tokens": b"".join(tokens),
        "lengths": np.asarray([len(t) for t in tokens], dtype=np.uint16).tobytes(),
        "ids": np.asarray([mergeable[t] for t in tokens], dtype=np.uint32).tobytes(),
    }
    write_entry(cache_file, msgpack.packb(data, use_bin_type=True))


def _eligible_spec(path: str | None, text: str | None = None):
    """(mergeable ranks as bytes -> id, pattern, specials, normalizer, offsets_reason) of an eligible
    file, else NotEligible."""
    if text is None:
        with open(os.fspath(path), encoding="utf-8") as f:
            text = f.read()
    spec = json.loads(text)
    if not isinstance(spec, dict) or not isinstance(spec.get("model"), dict):
        raise NotEligible("not a tokenizer.json")
    model = spec["model"]
    _model_checks(model)
    normalizer = _normalizer(spec.get("normalizer"))
    pattern = _pattern(spec.get("pre_tokenizer"))
    specials = _added_tokens(spec.get("added_tokens") or [], normalizer)
    vocab, merges = model.get("vocab") or {}, model.get("merges") or []
    if not isinstance(vocab, dict):
        raise NotEligible("vocab is not a mapping")
    ranks = buildable_ranks(vocab, merges, bool(model.get("ignore_merges")))
    decode = {c: b for b, c in bytes_to_unicode().items()}
    mergeable = {bytes(decode[c] for c in t): i for t, i in ranks.items()}
    return mergeable, pattern, specials, normalizer, _offsets_reason(spec.get("post_processor"))


def fast_encoder_for(
    path: str | None,
    library=None,
    threads: int = 1,
    cache_dir: str | list[str] | None = None,
    tokenizer_json: str | None = None,
):
    """(encoder, reason): a TiktokenEncoder when the tokenizer.json at `path` is eligible, else
    (None, why not).

    tokenizer_json: the serialization to decide from instead of the file (`Tokenizer.to_str()` of the
    object actually used, when a loader such as transformers changed it after reading the file).

    library: the file's `tokenizers` Tokenizer, or a no-argument callable returning it (loaded only
    when a text needs it). cache_dir: a directory or a list of them (cache_dirs: the build's work dir,
    then the user cache) where a passed check leaves the checked ranks under the file's SHA-256 and
    MintDim's and tiktoken's versions (pre-flight checks, each tokenize job reads them in ~0.1 s
    instead of ~2 s for the check; a later build of the same file in any work dir reads them too);
    only a passed check of the same bytes writes there, and an entry is used only when its stored
    content hash and checksum match."""
    try:
        import tiktoken  # noqa: F401
    except ImportError:
        return None, "tiktoken is not installed"
    if library is not None and not callable(library):
        if getattr(library, "encode_special_tokens", False):
            return None, "encode_special_tokens is on"
        tokenizer = library
        library = lambda: tokenizer  # noqa: E731
    elif library is None:
        library = _own_library(path, tokenizer_json)
    try:
        dirs = [cache_dir] if isinstance(cache_dir, str) else list(cache_dir or [])
        content = _digest(path, tokenizer_json) if dirs else None
        files = [os.path.join(d, ranks_name(content)) for d in dirs]
        found = None
        for cache_file in files:
            found = _read_cache(cache_file, content)
            if found is not None:
                break
        else:
            found = _eligible_spec(path, tokenizer_json)
            for cache_file in files:  # only a cache: an unwritable one is skipped
                _write_cache(cache_file, content, *found)
        *tables, offsets_reason = found
        encoder = TiktokenEncoder(*tables, library=library, threads=threads, offsets_reason=offsets_reason)
        return encoder, TIKTOKEN
    except NotEligible as exc:
        return None, str(exc)
    except Exception as exc:  # tiktoken refusing the pattern or the ranks: stay on the library
        return None, f"tiktoken could not be built ({type(exc).__name__}: {str(exc)[:200]})"
