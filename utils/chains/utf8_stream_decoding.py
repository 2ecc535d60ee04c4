"""utf8-stream-decoding: a character cut between byte tokens, the naive per-token decode it breaks, and
the buffered decoder (utils.components.utf8_stream) that the standard library's incremental decoder checks.

The chain enumerates every way to cut a sample text's bytes into pieces of at most L bytes (the
compositions of its length), counts the splits the naive decoder survives (every cut at a character
boundary), and runs the buffered decoder and `codecs.getincrementaldecoder("utf-8")` on each. A second
route counts both by dynamic programming; with no cap on a piece, the broken share is 1 - 2^-(n - c)
for n bytes and c characters, since each of the n - 1 gaps is cut or not and only the c - 1 boundaries
are safe. No tokenizer is installed offline, so the realistic split comes from byte-level BPE merges
learned on a small corpus of this book's own (utils.components.utf8_stream.train_bpe).
"""
from __future__ import annotations

import inspect

from utils.chain import Chain, memoised
from utils.components.utf8_stream import (
    INCOMPLETE,
    REPLACEMENT,
    StreamDecoder,
    boundaries,
    bpe_encode,
    client_view,
    count_splits,
    decode_stream,
    naive_decode,
    naive_raises,
    reference_decode,
    splits,
    train_bpe,
)
from utils.params import Param, ParameterError, Result, Spec
from utils.units import fmt, pct
from utils.verdicts import HOLDS, UNCHECKABLE, WRONG, Claim, rounds_to

PARAMETERS = (
    Param("text", "aé€👍", "the text whose every split is tried (one character of each UTF-8 length)", check="text",
          source="this book's choice: a 1-, 2-, 3- and 4-byte character"),
    Param("max_piece", 4, "the longest piece a split may cut, in bytes", unit="B", check="whole",
          source="this book's assumption: byte-level tokens that hold part of a character are short"),
    Param("stream_text", "ship it 👍 to the café for €5 😀", "the reply streamed through the BPE tokens",
          check="text", source="this book's example"),
    Param("n_merges", 100, "byte-pair merges learned on the corpus", check="whole",
          source="this book's choice: enough to merge common words, few enough to leave emoji cut"),
)

RESULTS = (
    Result("splits", "", "Splits of the text tried", of="N"),
    Result("naive_broken_splits", "", "Splits on which a naive per-token decode raises", of="N_broken"),
    Result("naive_broken_share", "", "Share of splits that break the naive decoder", of="f", percent=True),
    Result("stream_matches", "", "Splits on which the buffered decoder equals the standard library", of="N_match"),
    Result("bpe_tokens", "", "BPE tokens of the streamed reply", of="T"),
    Result("bpe_tokens_cut", "", "BPE tokens that hold part of a character", of="T_cut"),
)

MAX_SPLITS = 200_000          # the enumeration runs every split: keep a re-derivation well under a second

# A corpus of this book's own (no tokenizer is installed offline): English with emoji that share the
# four-byte prefix F0 9F, so BPE merges the prefix and leaves the last two bytes of a rare emoji apart.
CORPUS = ("the model streams tokens to the client and the client prints them as they arrive 🚀 "
          "a token is a few bytes and a character is one to four bytes 🔥 so the two do not line up 🎉 "
          "the reply said the café was open 😀 the menu was in euros € and the naïve decoder printed "
          "garbage 🙂 the stream decoder printed the text 👀 the tests passed ✅ ship it 🙌")


def validate(p):
    if not p.text or not p.stream_text:
        raise ParameterError("text and stream_text must not be empty")
    n = count_splits(len(p.text.encode("utf-8")), int(p.max_piece))
    if n > MAX_SPLITS:
        raise ParameterError(f"max_piece: the text has {n:,} splits at max_piece={p.max_piece}, over the "
                             f"{MAX_SPLITS:,} this chain enumerates; shorten text or lower max_piece")


def tally(text: str, max_piece: int) -> dict:
    """Run every split: how many break the naive decoder, how many the buffered decoder gets right."""
    data, n, broken, match = text.encode("utf-8"), 0, 0, 0
    for tokens in splits(data, max_piece):
        n += 1
        broken += naive_raises(tokens)
        match += decode_stream(tokens) == reference_decode(tokens) == text
    return dict(n=n, broken=broken, match=match, n_bytes=len(data), n_chars=len(text))


def stream_tokens(stream_text: str, n_merges: int) -> list[bytes]:
    return bpe_encode(stream_text, train_bpe(CORPUS, n_merges))


def token_rows(tokens: list[bytes]) -> list[dict]:
    """Per token: its bytes, what a naive decode does, what the buffered decoder emits and holds back."""
    dec, rows = StreamDecoder("replace"), []
    for t in tokens:
        try:
            naive = repr(t.decode("utf-8"))
        except UnicodeDecodeError as e:
            naive = f"raises: {e.reason} (start {e.start}, end {e.end})"
        out = dec.feed(t)
        rows.append(dict(hex=t.hex(" "), naive=naive, emitted=out, tail=dec.tail.hex(" ")))
    return rows


def compute(p) -> Chain:
    t = tally(p.text, int(p.max_piece))
    tokens = stream_tokens(p.stream_text, int(p.n_merges))
    cut = sum(naive_raises([tok]) for tok in tokens)
    src = "utils.components.utf8_stream: every split run"
    ch = Chain("Every split of the text, the naive decoder and the buffered one")
    ch.given("n", t["n_bytes"], "bytes of the text (UTF-8)", kind="assumption", source=SPEC.source(p, "text"))
    ch.given("c", t["n_chars"], "characters of the text", kind="assumption", source=SPEC.source(p, "text"))
    ch.given("L", int(p.max_piece), "longest piece, in bytes", kind="assumption", source=SPEC.source(p, "max_piece"))
    ch.given("N", t["n"], "splits into pieces of at most L bytes", kind="derived", source=src)
    ch.given("N_safe", t["n"] - t["broken"], "splits whose every cut is a character boundary", kind="derived",
             source=src)
    ch.step("N_broken", "N - N_safe", "", "splits on which a naive per-token decode raises")
    ch.step("f", "N_broken/N", "", "share of splits that break the naive decoder")
    ch.given("N_match", t["match"], "splits on which the buffered decoder and the standard library return the text",
             kind="derived", source=src)
    ch.step("f_inf", "1 - 2**(c - n)", "", "broken share with no cap on a piece (closed form)")
    ch.given("T", len(tokens), "BPE tokens of the streamed reply", kind="derived",
             source="utils.components.utf8_stream.bpe_encode on the book's corpus")
    ch.given("T_cut", cut, "tokens that hold part of a character (naive decode raises)", kind="derived",
             source="utils.components.utf8_stream.naive_raises")
    ch.value("dp_total", count_splits(t["n_bytes"], int(p.max_piece)))
    ch.value("dp_safe", count_splits(t["n_bytes"], int(p.max_piece), boundaries(p.text)))
    ch.data["tokens"] = tokens                    # the streamed reply's BPE tokens, for the exercises
    return ch


# --- the claim ------------------------------------------------------------------------------------
QUOTE = ("A four-byte emoji split across three tokens will raise on every naive decode, and the fix is a "
         "buffer that holds the incomplete tail. The decoder in a dozen lines, the exception field that "
         "tells you exactly where to cut, and what to do when the stream ends mid-character.")
CLAIM = dict(emoji="👍", tokens=3, lines=12)
LINES_QUOTE = "The decoder in a dozen lines"       # the source's words for the size, judged on their own


def decoder_lines() -> int:
    """Lines of code in the decoder's feed method (no comments, blanks or the def line)."""
    src = inspect.getsource(StreamDecoder.feed).splitlines()[1:]
    return sum(1 for line in src if line.strip() and not line.strip().startswith("#"))


@memoised
def checks() -> dict:
    """The claim on its own inputs: every way to cut the four-byte emoji into three tokens (deterministic, so
    memoised: the page and claims() share one run)."""
    C = CLAIM
    data = C["emoji"].encode("utf-8")
    three = [t for t in splits(data, len(data)) if len(t) == C["tokens"]]
    decodes = raised = 0
    for tokens in three:
        for tok in tokens:
            decodes += 1
            raised += naive_raises([tok])
        dec = StreamDecoder()
        seen = []
        for tok in tokens:
            buf = dec.tail + tok
            try:
                buf.decode("utf-8")
            except UnicodeDecodeError as e:
                seen.append((e.start, e.end, len(buf), e.reason))
            dec.feed(tok)
    fixed = all(decode_stream(t) == reference_decode(t) == C["emoji"] for t in three)
    cut_at_start = all(r == INCOMPLETE and end == n and start == 0 for start, end, n, r in seen) and bool(seen)
    truncated = data[:-1]
    try:
        decode_stream([truncated])
        strict_raises = False
    except UnicodeDecodeError:
        strict_raises = True
    replaced = decode_stream([truncated], errors="replace")
    lines = decoder_lines()
    return dict(three=three, decodes=decodes, raised=raised, fixed=fixed, cut_at_start=cut_at_start,
                strict_raises=strict_raises, replaced=replaced, lines=lines, n_bytes=len(data),
                lines_round=rounds_to(lines, C["lines"], 1),      # "a dozen", one figure: 10 to 14 lines
                flush_ok=strict_raises and replaced == REPLACEMENT and replaced == reference_decode([truncated], "replace"))


def claims() -> list[Claim]:
    ck = checks()
    ok = ck["raised"] == ck["decodes"] and ck["fixed"] and ck["cut_at_start"] and ck["flush_ok"]
    return [Claim(
        "emoji-three-tokens", quote=QUOTE, source="spec/001 (the UTF-8 stream decoding paragraph)",
        claimed="every naive decode raises; a buffer for the tail fixes it; the exception's field says where to cut",
        derived=f"{ck['raised']} of {ck['decodes']} naive decodes raise over the {len(ck['three'])} three-token "
                f"splits; the buffered decoder returns the emoji on all",
        verdict=HOLDS if ok else WRONG,
        nearest_true="" if ok else "not every part of the claim survives the run (see the check)",
        reason=f"each of the {fmt(len(ck['three']))} ways to cut the emoji's {fmt(ck['n_bytes'])} bytes into three "
               f"tokens makes every per-token decode raise ({fmt(ck['raised'])} of {fmt(ck['decodes'])}); the "
               f"decoder that buffers the tail where the error's start says returns the emoji on every one, as the "
               f"standard library's does, and a stream cut mid-character raises or ends in one replacement "
               f"character (the size, a dozen lines, is judged on its own)."),
        Claim(
        "dozen-lines", quote=LINES_QUOTE, source="spec/001 (the UTF-8 stream decoding paragraph)",
        claimed="the decoder is about twelve lines",
        derived=f"this book's decoder's feed: {ck['lines']} lines (the book's own code, not the source's)",
        verdict=UNCHECKABLE,
        reason=f"the source does not show its decoder, so its size can only be compared with this book's own, "
               f"which would check the book against itself; the book's feed is {fmt(ck['lines'])} lines, which "
               f"{'rounds to a dozen' if ck['lines_round'] else 'to one figure is not a dozen'} and also handles "
               f"errors='replace'.")]


# --- tables, figure, what changes, exercises -------------------------------------------------------
ERROR_CASES = (b"\xf0\x9f", b"ok\xf0\x9f\x91", b"\x91", b"\xf0\x9fa", b"\xc0\xaf", b"\xff", b"\xed\xa0\x80")


def error_rows() -> list[list[str]]:
    """What UnicodeDecodeError says for each case, and what the buffered decoder does with it."""
    rows = []
    for data in ERROR_CASES:
        try:
            data.decode("utf-8")
            continue
        except UnicodeDecodeError as e:
            tail = e.end == len(data) and e.reason == INCOMPLETE
            action = f"emit bytes before {e.start}, hold `{data[e.start:].hex(' ')}`" if tail else \
                f"invalid: raise, or one U+FFFD for bytes {e.start} to {e.end} and go on"
            rows.append([f"`{data.hex(' ')}`", f"`{e.start}`", f"`{e.end}`", f"`{len(data)}`", e.reason, action])
    return rows


def flush_rows(emoji: str = "👍") -> list[list[str]]:
    """A stream that ends after k bytes of the emoji: what each mode of each decoder gives at the end."""
    data, rows = emoji.encode("utf-8"), []
    for k in range(1, len(data)):
        cells = [f"`{data[:k].hex(' ')}`"]
        for fn in (decode_stream, reference_decode):
            for errors in ("strict", "replace"):
                try:
                    cells.append(f"`{fn([data[:k]], errors)!r}`")
                except UnicodeDecodeError:
                    cells.append("raises")
        rows.append(cells)
    return rows


# The cases tests/components/test_utf8_stream.py runs on every split (it imports them from here).
VALID_CASES = ("a", "é", "€", "👍", "aé€👍", "👍👍", "€a€", "Ω😀", "naïve")
INVALID_CASES = (b"\xff", b"\x80", b"a\x80b", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xf0\x9f\x91",
                 b"\xe2\x82a", b"\xf0\x9fa\x8d", b"\xe0\x80\xaf", b"\xc3", b"a\xf0", b"\xf8\x88\x80\x80\x80")
SURROGATE = b"\xed\xa0"     # a UTF-16 surrogate's encoding: the standard library waits for its third byte


def case_rows() -> list[list[str]]:
    """Every split of every test case in both modes, against the standard library token by token."""
    rows = []
    for case in [c.encode("utf-8") for c in VALID_CASES] + list(INVALID_CASES):
        tried, same = 0, 0
        for tokens in splits(case, len(case)):
            for errors in ("strict", "replace"):
                tried += 1
                a, b = client_view(tokens, errors), client_view(tokens, errors, reference=True)
                same += a == b or (SURROGATE in case and "".join(a[0]) == "".join(b[0]) and (a[1] == "ok") == (b[1] == "ok"))
        try:
            what = repr(case.decode("utf-8"))
        except UnicodeDecodeError as e:
            what = f"invalid ({e.reason})"
        rows.append([f"`{case.hex(' ')}`", what, fmt(tried // 2), fmt(same) + " of " + fmt(tried)])
    return rows


def broken_share_curve(text: str, pieces) -> list[float]:
    """Broken share of the splits against the longest piece (counted by dynamic programming)."""
    n, cuts = len(text.encode("utf-8")), boundaries(text)
    return [1 - count_splits(n, L, cuts) / count_splits(n, L) for L in pieces]


def check_text(ck: dict, chain) -> dict:
    return {"check-n-three": fmt(len(ck["three"])), "check-decodes": fmt(ck["decodes"]),
            "check-raised": fmt(ck["raised"]), "check-lines": fmt(ck["lines"]),
            "check-dp-total": fmt(chain["dp_total"]), "check-dp-safe": fmt(chain["dp_safe"])}


def what_changes(p, ch: Chain) -> dict:
    n, c = len(p.text.encode("utf-8")), len(p.text)
    longer = p.text * 2
    return {"wc-L-one": pct(broken_share_curve(p.text, [1])[0]),
            "wc-L-inf": pct(1 - 2.0 ** (c - n)),
            "wc-extra": fmt(n - c), "wc-double": pct(1 - 2.0 ** (len(longer) - len(longer.encode()))),
            "wc-ascii": pct(broken_share_curve("abcd", [4])[0])}


def exercises(p, ch: Chain) -> dict:
    s = p.stream_text
    n, c = len(s.encode("utf-8")), len(s)
    garbage = naive_decode(ch.data["tokens"], "replace")
    return {"ex1-n": fmt(n), "ex1-c": fmt(c), "ex1-share": pct(1 - 2.0 ** (c - n), digits=6),
            "ex1-gaps": fmt(n - c),
            "ex2-max": fmt(max(len(x.encode("utf-8")) for x in "\U0010ffff") - 1),
            "ex3-repl": fmt(garbage.count(REPLACEMENT)),
            "ex3-lost": fmt(sum(len(x.encode()) > 1 and x not in garbage for x in set(s)))}


SPEC = Spec("utf8-stream-decoding", PARAMETERS, RESULTS, compute, validate=validate, closed_form=True)
