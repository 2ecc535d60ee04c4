"""Decoding a stream of byte tokens into text: the incremental UTF-8 decoder and what it replaces.

A byte-level tokenizer emits tokens that are byte strings, and a character of two to four bytes can be
cut between tokens. `bytes.decode()` on each token then raises (or, with errors="replace", prints
replacement characters for one valid character). The fix is a buffer holding the incomplete tail: the
next token completes it. UnicodeDecodeError says where to cut: the first bad byte is `start`, and an
error whose `end` is the end of the buffer with reason 'unexpected end of data' is a character that is
only incomplete (keep it); any other error is invalid bytes (raise, or replace them).

    dec = StreamDecoder(errors="replace")
    text = "".join(dec.feed(tok) for tok in tokens) + dec.flush()

The decoder matches the standard library's `codecs.getincrementaldecoder("utf-8")` on every split
(tests/components/test_utf8_stream.py), token by token, with one difference: on ED A0..BF (the encoding of a UTF-16
surrogate, never valid UTF-8) the standard library waits for the third byte, because its
'surrogatepass' handler could accept the whole; this decoder reports the bytes as invalid at once, as
`bytes.decode` does, and the text is the same. The helpers below enumerate the splits and build
byte-level BPE pieces.

Chapters: utf8-stream-decoding.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator

INCOMPLETE = "unexpected end of data"     # CPython's reason for a character cut off at the end
REPLACEMENT = "\ufffd"
ERRORS = ("strict", "replace")


class StreamDecoder:
    """Feed byte chunks, get the text that is complete so far; `flush()` at the end of the stream.

    errors="strict" raises UnicodeDecodeError on invalid bytes and on a stream that ends mid-character;
    errors="replace" puts one U+FFFD per maximal invalid subsequence (the standard library's rule)."""

    def __init__(self, errors: str = "strict"):
        if errors not in ERRORS:
            raise ValueError(f"errors must be one of {', '.join(ERRORS)}, got {errors!r}")
        self.errors = errors
        self.tail = b""                   # at most three bytes: the start of an unfinished character

    def feed(self, chunk: bytes) -> str:
        data, out, self.tail = self.tail + bytes(chunk), [], b""
        while data:
            try:
                out.append(data.decode("utf-8"))
                break
            except UnicodeDecodeError as e:
                out.append(data[:e.start].decode("utf-8"))     # everything before start is valid
                if e.end == len(data) and e.reason == INCOMPLETE:
                    self.tail = data[e.start:]                  # incomplete tail: wait for more bytes
                    break
                if self.errors == "strict":
                    raise                                       # invalid bytes, not a cut character
                out.append(REPLACEMENT)                         # one U+FFFD, then go on after them
                data = data[e.end:]
        return "".join(out)

    def flush(self) -> str:
        """The end of the stream: an unfinished character is an error, or one replacement character."""
        tail, self.tail = self.tail, b""
        if not tail:
            return ""
        if self.errors == "strict":
            raise UnicodeDecodeError("utf-8", tail, 0, len(tail), "stream ended mid-character")
        return REPLACEMENT


def decode_stream(tokens: Iterable[bytes], errors: str = "strict") -> str:
    dec = StreamDecoder(errors)
    return "".join(dec.feed(t) for t in tokens) + dec.flush()


def reference_decode(tokens: Iterable[bytes], errors: str = "strict") -> str:
    """The standard library's incremental decoder, the reference the tests compare with."""
    import codecs
    dec = codecs.getincrementaldecoder("utf-8")(errors)
    return "".join(dec.decode(t) for t in tokens) + dec.decode(b"", final=True)


def client_view(tokens: Iterable[bytes], errors: str = "strict", *, reference: bool = False) -> tuple[list, str]:
    """What a client sees, token by token: the text after each token and at the end, and how it ended
    ("ok", "raised at token i", "raised at the end"). reference=True runs the standard library's decoder."""
    if reference:
        import codecs
        d = codecs.getincrementaldecoder("utf-8")(errors)
        feed, final = d.decode, lambda: d.decode(b"", final=True)
    else:
        d = StreamDecoder(errors)
        feed, final = d.feed, d.flush
    out = []
    for i, t in enumerate(tokens):
        try:
            out.append(feed(t))
        except UnicodeDecodeError:
            return out, f"raised at token {i}"
    try:
        out.append(final())
    except UnicodeDecodeError:
        return out, "raised at the end"
    return out, "ok"


def naive_decode(tokens: Iterable[bytes], errors: str = "strict") -> str:
    """The bug: each token decoded on its own."""
    return "".join(bytes(t).decode("utf-8", errors) for t in tokens)


# --- splits -----------------------------------------------------------------------------------------
def splits(data: bytes, max_piece: int) -> Iterator[list[bytes]]:
    """Every way to cut `data` into consecutive pieces of 1..max_piece bytes (compositions of its length)."""
    if not data:
        yield []
        return
    for k in range(1, min(max_piece, len(data)) + 1):
        for rest in splits(data[k:], max_piece):
            yield [data[:k], *rest]


def count_splits(n: int, max_piece: int, allowed_cuts: set[int] | None = None) -> int:
    """How many splits `splits` yields for n bytes, by dynamic programming (a second route); with
    `allowed_cuts`, only the splits whose every cut lies in that set (e.g. the character boundaries)."""
    ways = [1] + [0] * n
    for end in range(1, n + 1):
        if allowed_cuts is not None and end < n and end not in allowed_cuts:
            continue                                     # no piece may end here
        ways[end] = sum(ways[s] for s in range(max(0, end - max_piece), end)
                        if s == 0 or allowed_cuts is None or s in allowed_cuts)
    return ways[n]


def boundaries(text: str) -> set[int]:
    """The byte offsets inside text.encode() where a character ends (the cuts a naive decoder survives)."""
    out, pos = set(), 0
    for ch in text[:-1]:
        pos += len(ch.encode("utf-8"))
        out.add(pos)
    return out


def naive_raises(tokens: Iterable[bytes]) -> bool:
    try:
        naive_decode(tokens)
    except UnicodeDecodeError:
        return True
    return False


# --- byte-level BPE-like pieces (no tokenizer is installed offline) ---------------------------------
def train_bpe(corpus: str, n_merges: int) -> list[tuple[bytes, bytes]]:
    """Learn byte-pair merges on `corpus` (its UTF-8 words, see `pretokenize`): each round merges the most
    frequent adjacent pair, ties to the first seen. Bytes never merge
    across a word, but freely inside a character, which is how real tokenizers cut emoji."""
    words = [[bytes([b]) for b in w] for w in pretokenize(corpus)]
    merges = []
    for _ in range(n_merges):
        pairs = Counter((a, b) for w in words for a, b in zip(w, w[1:]))
        if not pairs:
            break
        best = max(pairs, key=pairs.__getitem__)          # max keeps the first of equal counts
        merges.append(best)
        words = [_merge(w, best) for w in words]
    return merges


def pretokenize(text: str) -> list[bytes]:
    """Words as UTF-8 bytes, a space riding at the front of each word after the first (GPT-2's 'Ġ')."""
    return [((" " if i else "") + w).encode("utf-8") for i, w in enumerate(text.split(" ")) if w or not i]


def _merge(word: list[bytes], pair: tuple[bytes, bytes]) -> list[bytes]:
    out, i = [], 0
    while i < len(word):
        if i + 1 < len(word) and (word[i], word[i + 1]) == pair:
            out.append(word[i] + word[i + 1])
            i += 2
        else:
            out.append(word[i])
            i += 1
    return out


def bpe_encode(text: str, merges: list[tuple[bytes, bytes]]) -> list[bytes]:
    """Encode text with the learned merges, applied in the order they were learned."""
    tokens = []
    for w in pretokenize(text):
        word = [bytes([b]) for b in w]
        for pair in merges:
            word = _merge(word, pair)
        tokens += word
    return tokens
