"""utils/components/utf8_stream.py: the buffered decoder equals the standard library's incremental decoder on every
split of every case, token by token, in both error modes; the naive decoder breaks where it should."""
import random

import pytest

from utils.chains.utf8_stream_decoding import INVALID_CASES, SURROGATE, VALID_CASES
from utils.components.utf8_stream import (
    REPLACEMENT,
    StreamDecoder,
    boundaries,
    bpe_encode,
    client_view,
    count_splits,
    decode_stream,
    naive_decode,
    naive_raises,
    splits,
    train_bpe,
)

VALID, INVALID = VALID_CASES, INVALID_CASES        # the chapter's table of cases shows these


def ours(tokens, errors):
    return client_view(tokens, errors)


def stdlib(tokens, errors):
    return client_view(tokens, errors, reference=True)


CASES = [s.encode("utf-8") for s in VALID] + list(INVALID)


@pytest.mark.parametrize("data", CASES, ids=lambda b: b.hex())
@pytest.mark.parametrize("errors", ["strict", "replace"])
def test_every_split_matches_the_standard_library_token_by_token(data, errors):
    n = 0
    for tokens in splits(data, len(data)):
        if SURROGATE in data:                  # the one documented difference: the error comes sooner
            (a, how_a), (b, how_b) = ours(tokens, errors), stdlib(tokens, errors)
            assert "".join(a) == "".join(b) or how_a.startswith("raised")
            assert how_a.split()[-1] <= how_b.split()[-1] if how_a != "ok" else how_b == "ok"
        else:
            assert ours(tokens, errors) == stdlib(tokens, errors), tokens
        n += 1
    assert n == 2 ** (len(data) - 1)           # every composition of the length was tried


def test_valid_text_decodes_exactly_on_every_split_and_the_tail_stays_short():
    for s in VALID:
        for tokens in splits(s.encode(), 4):
            d = StreamDecoder()
            text = ""
            for t in tokens:
                text += d.feed(t)
                assert len(d.tail) <= 3
            assert text + d.flush() == s


def test_the_emoji_in_three_tokens_raises_on_every_naive_decode():
    emoji = "👍".encode()
    three = [t for t in splits(emoji, 4) if len(t) == 3]
    assert len(three) == 3
    for tokens in three:
        for t in tokens:
            with pytest.raises(UnicodeDecodeError):
                t.decode("utf-8")
        garbage = naive_decode(tokens, "replace")
        assert "👍" not in garbage and garbage.count(REPLACEMENT) >= 3    # three or four U+FFFD, no emoji
        assert decode_stream(tokens) == "👍"


def test_the_naive_decoder_breaks_exactly_when_a_cut_falls_inside_a_character():
    s = "aé€👍"
    cuts_ok = boundaries(s)
    assert cuts_ok == {1, 3, 6}
    for tokens in splits(s.encode(), 4):
        cuts = {sum(map(len, tokens[:i])) for i in range(1, len(tokens))}
        assert naive_raises(tokens) == (not cuts <= cuts_ok)


def test_the_exception_fields_say_where_to_cut():
    with pytest.raises(UnicodeDecodeError) as e:
        b"ok\xf0\x9f\x91".decode()
    assert (e.value.start, e.value.end, e.value.reason) == (2, 5, "unexpected end of data")
    with pytest.raises(UnicodeDecodeError) as e:
        b"ok\xf0\x9fa".decode()
    assert (e.value.start, e.value.end, e.value.reason) == (2, 4, "invalid continuation byte")
    d = StreamDecoder()
    assert d.feed(b"ok\xf0\x9f\x91") == "ok" and d.tail == b"\xf0\x9f\x91"


def test_end_of_stream_mid_character_raises_or_replaces():
    d = StreamDecoder("strict")
    assert d.feed(b"a\xf0\x9f") == "a"
    with pytest.raises(UnicodeDecodeError, match="mid-character"):
        d.flush()
    d = StreamDecoder("replace")
    assert d.feed(b"a\xf0\x9f") + d.flush() == "a" + REPLACEMENT
    assert d.flush() == ""                      # the tail is gone after a flush


def test_strict_invalid_bytes_raise_at_the_token_that_brings_them():
    d = StreamDecoder()
    assert d.feed(b"a") == "a"
    with pytest.raises(UnicodeDecodeError, match="invalid start byte"):
        d.feed(b"\xff")


def test_random_streams_match_the_standard_library():
    rng = random.Random(7)
    alphabet = [c.encode() for c in "aZ é€👍😀"] + [b"\xff", b"\x80", b"\xf0\x9f", b"\xe2"]
    for _ in range(400):
        data = b"".join(rng.choice(alphabet) for _ in range(rng.randint(0, 8)))
        cuts = sorted(rng.sample(range(1, len(data)), rng.randint(0, max(0, len(data) - 1)))) if data else []
        tokens = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)])]
        for errors in ("strict", "replace"):
            assert ours(tokens, errors) == stdlib(tokens, errors)


def test_empty_tokens_and_bad_mode():
    assert decode_stream([b"", b"\xf0\x9f", b"", b"\x91\x8d", b""]) == "👍"
    with pytest.raises(ValueError, match="errors must be"):
        StreamDecoder("ignore")


@pytest.mark.parametrize("n,L", [(1, 1), (5, 2), (10, 4), (10, 10), (7, 3)])
def test_count_splits_agrees_with_the_enumeration(n, L):
    data = bytes(n)
    assert count_splits(n, L) == sum(1 for _ in splits(data, L))
    s = "aé€👍"
    allowed = boundaries(s)
    assert count_splits(len(s.encode()), L, allowed) == sum(
        1 for t in splits(s.encode(), L) if not naive_raises(t))


def test_byte_level_bpe_cuts_an_emoji_into_three_tokens():
    corpus = "go 🚀 now 🔥 yes 🎉 go go now now yes yes"
    merges = train_bpe(corpus, 4)
    tokens = bpe_encode("go 👍", merges)
    assert b"".join(tokens) == "go 👍".encode()
    assert tokens[-3:] == [b" \xf0\x9f", b"\x91", b"\x8d"]
