"""data-pipeline-15t: fifteen trillion tokens, from a web crawl to token shards, byte by byte.

Clean text is tokens x text bytes per token; the crawl is that over the product of the stages' keep
fractions (solved for); each stage's cores are its input bytes over one core's rate and the time allowed;
the shards are tokens x bytes per id, and an id needs ceil(log2 V) bits of the model's vocabulary V, so
the model is one parameter. The training job reads the shards at its token rate.
"""
from __future__ import annotations

import math

from utils import catalog
from utils.chain import Chain, as_float
from utils.params import Param, ParameterError, Result, Spec
from utils.units import counted, fmt, pct, q, short
from utils.verdicts import READING, UNCHECKABLE, Claim, rounds_to, within

# Megatron-LM's DType.optimal_dtype: uint16 below this cardinality, else int32 (catalog software)
MEGATRON_UINT16_BELOW = int(as_float(catalog.entry("software", "megatron-lm-indexed-dataset").q("uint16_below")))

PARAMETERS = (
    Param("tokens", 15e12, "training tokens the pipeline must deliver", unit="token", source="the claim"),
    Param("model", "llama-3-405b", "the model: its vocabulary sets the token-id width (catalog key or config.json)",
          check="model", source="catalog: Llama-3.1-405B"),
    Param("bytes_per_token_id", 4.0, "bytes per token id in the shards (4: int32; 2: uint16; 2.125: 17-bit packed)",
          unit="B/token", source=f"Megatron-LM indexed_dataset.py: int32 at or above {MEGATRON_UINT16_BELOW:,} ids"),
    Param("text_bytes_per_token", 3.94, "bytes of clean text per token (the tokenizer's compression)",
          unit="B/token", source="Llama 3 paper, sec. 3.2: 3.94 characters per token"),
    Param("keep_extract", 0.03, "extracted main-content text / uncompressed HTML bytes", check="fraction",
          source="this book's assumption (see the chain's sources)"),
    Param("keep_language", 0.46, "share kept by language identification (English only)", check="fraction",
          source="Common Crawl language statistics, March 2023"),
    Param("keep_quality", 0.5, "share kept by the quality filters (heuristics and a classifier)", check="fraction",
          source="this book's assumption, in line with RefinedWeb"),
    Param("keep_dedup", 0.5, "share kept by exact and MinHash near-duplicate removal", check="fraction",
          source="this book's assumption, in line with RefinedWeb"),
    Param("raw_compression", 5.8, "uncompressed / stored (gzip) bytes of the crawl's WARC files",
          source="arXiv:2404.09770 and Common Crawl, December 2024"),
    Param("raw_bytes_per_page", 164e3, "uncompressed bytes per crawled page (HTML and headers)", unit="B",
          source="Common Crawl, December 2024 crawl"),
    Param("days", 14.0, "days the pipeline has to finish", unit="day", source="the claim (two weeks)"),
    Param("rate_extract", 3.0, "MB/s per core: WARC parse + HTML-to-text extraction, on HTML bytes", unit="MB/s",
          source="this book's assumption"),
    Param("rate_language", 30.0, "MB/s per core: language identification, on extracted text", unit="MB/s",
          source="this book's assumption"),
    Param("rate_quality", 10.0, "MB/s per core: quality heuristics and classifier, on text", unit="MB/s",
          source="this book's assumption"),
    Param("rate_dedup", 2.0, "MB/s per core: MinHash signatures and bucketing, on text", unit="MB/s",
          source="this book's assumption"),
    Param("rate_tokenize", 5.0, "MB/s per core: BPE tokenisation and shard writing, on clean text", unit="MB/s",
          source="this book's assumption"),
    Param("train_tokens_per_second", 1.7e6, "tokens per second the training job consumes", unit="token/s",
          source="the claim (1.7M tokens/s); the check derives its own rate for the claim's cluster"),
)

RESULTS = (
    Result("raw_bytes", "PB", "Crawl HTML, uncompressed (extraction's input)", of="W_raw"),
    Result("raw_stored_bytes", "PB", "Crawl as stored (compressed WARC)", of="W_stored"),
    Result("extracted_text_bytes", "TB", "Extracted text, before filtering", of="W_text"),
    Result("clean_text_bytes", "TB", "Clean text, after deduplication", of="W_clean"),
    Result("shard_bytes", "TB", "Token shards", of="S"),
    Result("extract_throughput", "GB/s", "Extraction throughput to finish in time", of="X_raw"),
    Result("dominant_stage_cores", "", "Cores for the busiest stage", of="n_top"),
    Result("total_cores", "", "Cores, whole pipeline", of="n_total"),
    Result("train_read_bandwidth", "MB/s", "Shard read bandwidth of the training job", of="B_read"),
    Result("train_days", "day", "Days to read every token once", of="T_train"),
)

CC_DEC2024 = ("Common Crawl blog, 'December 2024 crawl archive now available' (blog.commoncrawl.org, read "
              "2026-11-30): 2.64 billion pages, 394 TiB of uncompressed content, so 164 kB a page")
CC_STORED = ("arXiv:2404.09770, 'Improved methodology for longitudinal Web analytics using Common Crawl' "
             "(WebSci 2024, read 2026-11-30): each archive 'on the order of 75TB'; against 394 TiB uncompressed "
             "(Common Crawl, December 2024) that is a ratio of about 5.8")
CC_LANG = ("Common Crawl language statistics, March 2023 crawl, as summarised in Wikipedia's 'Common Crawl' "
           "article (read 2026-11-30): 46% of documents have English as their primary language")
LLAMA3_TOK = ("The Llama 3 Herd of Models, arXiv:2407.21783, sec. 3.2 (read 2026-11-30): the 128K-token tokenizer "
              "compresses English to 3.94 characters per token (Llama 2's: 3.17); ASCII characters are one byte")
REFINEDWEB = ("this book's assumption, in line with RefinedWeb (Penedo et al. 2023, arXiv:2306.01116, Fig. 2), "
              "whose filtering and deduplication keep roughly a tenth of Common Crawl's documents, about half "
              "after language identification")
EXTRACT = ("this book's assumption: a page's record is 164 kB uncompressed and main-content extraction keeps a "
           "few kB of text; bounded above by Common Crawl's WET/WARC ratio, 4.54/28.94 TiB compressed in the "
           "September 2016 crawl (commoncrawl.org, read 2026-11-30), since WET keeps all visible text")
RATE = ("this book's assumption for one modern x86 core (order of magnitude; not measured here): "
        "Python HTML extraction of the trafilatura class runs tens of pages a second")
STAGES = (("extraction", "n_e", "W_raw"), ("language ID", "n_l", "W_text"), ("quality", "n_q", "W_lang"),
          ("MinHash dedup", "n_d", "W_qual"), ("tokenisation", "n_t", "W_clean"))
INPUTS = tuple(p.name for p in PARAMETERS if p.name != "model")


def vocab(model) -> int:
    return int(as_float(model.q("vocab_size")))


def chars_per_token(key: str) -> float:
    """English characters (ASCII: bytes) per token of a Llama model's tokenizer, from the catalog (LLAMA3_TOK)."""
    return as_float(catalog.model(key).q("chars_per_token"))


def bits_for(v: int) -> int:
    """Bits a token id needs: ceil(log2 V), in exact integer arithmetic (ids 0 to V - 1 need the bit length of
    V - 1; tests/chains/test_data_pipeline_15t.py holds it to sympy's ceiling(log(V, 2)))."""
    if v < 1:
        raise ValueError(f"a vocabulary of {v} tokens")
    return (int(v) - 1).bit_length()


def validate(p) -> None:
    need = bits_for(vocab(p.model))
    if p.bytes_per_token_id * 8 < need:
        raise ParameterError(f"bytes_per_token_id={p.bytes_per_token_id!r} holds {int(p.bytes_per_token_id * 8)} "
                             f"bits, but {p.model.name}'s vocabulary of {vocab(p.model):,} needs {need}")
    if p.raw_compression < 1:
        raise ParameterError(f"raw_compression must be >= 1, got {p.raw_compression!r}")


def data_pipeline(tokens, bytes_per_token_id, text_bytes_per_token, keep_extract, keep_language, keep_quality,
                  keep_dedup, raw_compression, raw_bytes_per_page, days, rate_extract, rate_language,
                  rate_quality, rate_dedup, rate_tokenize, train_tokens_per_second, *, source="parameters cell"):
    """source: one source for every input the caller set, or a function of the parameter's name (compute passes
    the spec's); an input with a fuller citation keeps it unless a reader changed it."""
    src = source if callable(source) else (lambda name: source)

    def cite(name, full):
        return "parameters cell" if src(name) == "parameters cell" else full

    ch = Chain("Fifteen trillion tokens, from crawl to shards")
    ch.given("D", q(tokens, "token"), "training tokens", kind="assumption", source=src("tokens"))
    ch.given("b_id", q(bytes_per_token_id, "B/token"), "bytes per token id in a shard", kind="assumption",
             source=cite("bytes_per_token_id",
                         f"Megatron-LM indexed_dataset.py: uint16 below {MEGATRON_UINT16_BELOW:,} ids, else int32"))
    ch.given("b_txt", q(text_bytes_per_token, "B/token"), "clean-text bytes per token", kind="spec",
             source=cite("text_bytes_per_token", LLAMA3_TOK))
    ch.step("S", "D*b_id", "TB", "token shards")
    ch.step("W_clean", "D*b_txt", "TB", "clean text (after deduplication)")
    ch.given("k_e", keep_extract, "extraction keeps (text / HTML bytes)", kind="assumption",
             source=cite("keep_extract", EXTRACT))
    ch.given("k_l", keep_language, "language identification keeps", kind="assumption",
             source=cite("keep_language", CC_LANG))
    ch.given("k_q", keep_quality, "quality filtering keeps", kind="assumption", source=cite("keep_quality", REFINEDWEB))
    ch.given("k_d", keep_dedup, "deduplication keeps", kind="assumption", source=cite("keep_dedup", REFINEDWEB))
    ch.solve("W_raw", "W_clean = W_raw*k_e*k_l*k_q*k_d", "PB", "crawl HTML, uncompressed")
    ch.given("z", raw_compression, "WARC compression (uncompressed / stored)", kind="assumption",
             source=cite("raw_compression", CC_STORED))
    ch.step("W_stored", "W_raw/z", "PB", "crawl as stored (gzip WARC)")
    ch.step("W_text", "W_raw*k_e", "TB", "extracted text")
    ch.step("W_lang", "W_text*k_l", "TB", "after language identification")
    ch.step("W_qual", "W_lang*k_q", "TB", "after quality filtering (into dedup)")
    ch.given("s_page", q(raw_bytes_per_page, "B"), "uncompressed bytes per crawled page", kind="spec",
             source=cite("raw_bytes_per_page", CC_DEC2024))
    ch.step("P", "W_raw/s_page", "", "pages to process")
    ch.given("t", q(days, "day"), "time allowed", kind="assumption", source=src("days"))
    ch.step("X_raw", "W_raw/t", "GB/s", "extraction throughput needed")
    ch.step("p_rate", "P/t", "1/s", "pages per second")
    ch.step("X_clean", "W_clean/t", "MB/s", "tokenisation throughput needed")
    ch.given("r_e", q(rate_extract, "MB/s"), "extraction rate per core", kind="assumption",
             source=cite("rate_extract", RATE))
    ch.given("r_l", q(rate_language, "MB/s"), "language-ID rate per core", kind="assumption",
             source=cite("rate_language", "this book's assumption: a fastText linear classifier"))
    ch.given("r_q", q(rate_quality, "MB/s"), "quality-filter rate per core", kind="assumption",
             source=cite("rate_quality", "this book's assumption: regex/statistics heuristics plus a fastText-class classifier"))
    ch.given("r_d", q(rate_dedup, "MB/s"), "MinHash rate per core", kind="assumption",
             source=cite("rate_dedup", "this book's assumption: one hash per word 5-gram, a hundred-odd permutations each"))
    ch.given("r_t", q(rate_tokenize, "MB/s"), "tokenisation rate per core", kind="assumption",
             source=cite("rate_tokenize", "this book's assumption: a compiled BPE (tiktoken / HF tokenizers) on one thread"))
    ch.step("n_e", "W_raw/(r_e*t)", "", "cores: extraction")
    ch.step("n_l", "W_text/(r_l*t)", "", "cores: language identification")
    ch.step("n_q", "W_lang/(r_q*t)", "", "cores: quality filtering")
    ch.step("n_d", "W_qual/(r_d*t)", "", "cores: MinHash deduplication")
    ch.step("n_t", "W_clean/(r_t*t)", "", "cores: tokenisation")
    ch.step("n_all", "n_e + n_l + n_q + n_d + n_t", "", "cores, whole pipeline")
    ch.step("f_e", "n_e/n_all", "", "extraction's share of the cores")
    ch.given("R", q(train_tokens_per_second, "token/s"), "training read rate", kind="assumption",
             source=src("train_tokens_per_second"))
    ch.step("B_read", "R*b_id", "MB/s", "shard read bandwidth")
    ch.step("T_train", "D/R", "day", "time to read every token once")
    busiest = max(STAGES, key=lambda st: as_float(ch[st[1]]))
    ch.given("n_top", math.ceil(as_float(ch[busiest[1]])), f"cores for the busiest stage ({busiest[0]}), whole",
             kind="derived", source="the stages above")
    ch.given("n_total", math.ceil(as_float(ch["n_all"])), "cores, whole pipeline, whole", kind="derived",
             source="the stages above")
    return ch


def ranked(ch) -> list[tuple]:
    """Stages by cores, largest first."""
    return sorted(STAGES, key=lambda s: -as_float(ch[s[1]]))


def compute(p) -> Chain:
    return data_pipeline(**{n: p[n] for n in INPUTS}, source=lambda name: SPEC.source(p, name))


# --- the claim ------------------------------------------------------------------------------------
QUOTE = ("Fifteen trillion tokens starts as a few petabytes of raw text and ends as 30 TB of shards a "
         "training job reads at 1.7 million tokens per second. The stages, the bytes at each boundary, the "
         "throughput each one needs to finish in two weeks, and the two stages where the pipeline actually "
         "spends its time.")
SOURCE = "spec/000, paragraph on the fifteen-trillion-token data pipeline"
# "a few petabytes": read as more than one and fewer than ten.
CLAIM = dict(tokens=15e12, raw_low=1e15, raw_high=10e15, shard_bytes=30e12, train_tokens_per_second=1.7e6, days=14)
BOM_NODES, BOM_GPN, BOM_MFU = 1280, 8, 0.4    # the bill-of-materials chapter's claim cluster and MFU


def read_rate() -> dict:
    """The claim's read rate, derived: the bill-of-materials cluster at its MFU on a dense 405B model, and
    Meta's own run (the Llama 3 paper's per-GPU rate on its Table 4 row)."""
    run_ = catalog.run("llama-3-405b-pretraining")
    h100 = catalog.accelerator(run_.q("accelerator"))
    n405 = catalog.model("llama-3-405b").q("params_total")
    per_token = 6 * n405 / q(1, "token") * q(1, "FLOP/parameter")
    gpus = BOM_NODES * BOM_GPN
    bom = (gpus * BOM_MFU * h100.q("bf16_dense") / per_token).to("token/s")
    meta_gpus = as_float(run_.q("table4_row2_gpus"), "GPU")
    meta = (meta_gpus * run_.q("table4_row2_tflops_per_gpu") / per_token).to("token/s")
    return dict(bom=bom, meta=meta, gpus=gpus, meta_gpus=meta_gpus, tectonic=run_.q("storage_sustained"))


def claim_chains() -> dict:
    """The claim's readings through the same chain: the stages at the parameters' defaults, the claim's
    tokens and two weeks, and the read rate the claim's cluster actually sustains (not the claimed one)."""
    rate = as_float(read_rate()["bom"], "token/s")
    base = dict({n: SPEC.defaults()[n] for n in INPUTS}, tokens=CLAIM["tokens"], days=float(CLAIM["days"]),
                train_tokens_per_second=rate)
    llama3_bits = bits_for(vocab(catalog.model("llama-3-405b")))
    llama2_chars, llama3_chars = chars_per_token("llama-2-7b"), chars_per_token("llama-3-405b")
    return dict(
        two_byte=data_pipeline(**dict(base, bytes_per_token_id=2.0, text_bytes_per_token=llama2_chars), source="the claim"),
        four_byte=data_pipeline(**dict(base, bytes_per_token_id=4.0, text_bytes_per_token=llama3_chars), source="the claim"),
        packed=data_pipeline(**dict(base, bytes_per_token_id=llama3_bits / 8, text_bytes_per_token=llama3_chars),
                             source="the claim"),
        claimed_rate=data_pipeline(**dict(base, train_tokens_per_second=CLAIM["train_tokens_per_second"]),
                                   source="the claim"),
        llama3_bits=llama3_bits)


def claims() -> list[Claim]:
    c, r = claim_chains(), read_rate()
    two, four, packed = c["two_byte"], c["four_byte"], c["packed"]
    stored = as_float(four["W_stored"], "B")
    rate_ok = rounds_to(r["bom"], q(CLAIM["train_tokens_per_second"], "token/s"), 2)
    shards_ok = within(two["S"], q(CLAIM["shard_bytes"], "B"), 1e-12)
    raw_ok = CLAIM["raw_low"] <= stored < CLAIM["raw_high"]
    assert shards_ok    # the reading below lands; its verdict rests on this
    not_claimed = "" if rate_ok else f" (not {short(CLAIM['train_tokens_per_second'])})"
    v2 = fmt(q(65536, ""))
    return [
        Claim("shards", quote="ends as 30 TB of shards", source=SOURCE, claimed=fmt(q(CLAIM["shard_bytes"], "B"), "TB"),
              derived=(f"{fmt(two['S'])} at two bytes an id (a vocabulary under {v2}); {fmt(four['S'])} as int32 "
                       f"for Llama-3's {fmt(vocab(catalog.model('llama-3-405b')))}; {fmt(packed['S'])} bit-packed"),
              verdict=READING,
              reading=f"'{fmt(q(CLAIM['shard_bytes'], 'B'), 'TB')} of shards' read as token ids of two bytes, which "
                      f"needs a vocabulary under {v2} "
                      f"(Llama-2's, GPT-2's); the sentence names no tokenizer",
              reason=(f"{short(CLAIM['tokens'])} tokens at two bytes is {fmt(two['S'])}, but Llama-3's vocabulary needs "
                      f"{c['llama3_bits']} bits, so its shards are {fmt(four['S'])} as written")),
        Claim("raw", quote=QUOTE, source=SOURCE, claimed="a few PB of raw text",
              derived=(f"{fmt(four['W_stored'].to('PB'))} of compressed WARC; {fmt(four['W_raw'].to('PB'))} of HTML "
                       f"uncompressed; {fmt(four['W_text'].to('PB'))} of extracted text"),
              verdict=UNCHECKABLE,
              reason=(f"the source names no crawl and no filters, so the raw size is the book's figure, set by keep "
                      f"fractions of which three are its own assumptions: with them the crawl as stored is "
                      f"{fmt(four['W_stored'].to('PB'))}{'' if raw_ok else ' (not a few PB)'}, the HTML inside "
                      f"{fmt(four['W_raw'].to('PB'))} and the extracted text {fmt(four['W_text'].to('PB'))}")),
        Claim("read-rate", quote="a training job reads at 1.7 million tokens per second", source=SOURCE,
              claimed="1.7M tokens/s",
              derived=f"the book's cluster: {short(as_float(r['bom'], 'token/s'))} tokens/s", verdict=UNCHECKABLE,
              reason=(f"the sentence names no model, no GPUs and no MFU, so a rate is the book's figure: "
                      f"{fmt(r['gpus'])} H100s at {pct(BOM_MFU)} MFU on a dense Llama-3-405B-sized model consume "
                      f"{short(as_float(r['bom'], 'token/s'))} tokens a second{not_claimed}, "
                      f"Meta's own run of that model {short(as_float(r['meta'], 'token/s'))}; the shard read is "
                      f"{fmt(four['B_read'])}, trivial for storage")),
    ]


# --- the page's numbers ------------------------------------------------------------------------------
def vocab_rows() -> list[tuple]:
    """Vocabularies against the two-byte limit: label, V, bits, fits two bytes, what Megatron-LM writes."""
    v2, v3, ds = (vocab(catalog.model(k)) for k in ("llama-2-7b", "llama-3-405b", "deepseek-v3"))
    return [(label, v, bits_for(v), v <= 2 ** 16, "uint16" if v < MEGATRON_UINT16_BELOW else "int32")
            for label, v in (("Llama 2 (32k)", v2), ("GPT-2 (50,257)", 50257),
                             (f"Llama 3 ({short(v3)})", v3), ("DeepSeek-V3", ds))]


def chain_texts(p, ch) -> dict:
    order = ranked(ch)
    return {"vocab-llama3": fmt(q(vocab(p.model), "")), "bits-llama3": str(bits_for(vocab(p.model))),
            "vocab-max-2b": fmt(q(2 ** 16, "")), "intro-tokens": short(p.tokens) + " tokens",
            "intro-days": counted(p.days, "days"), "pages": short(as_float(ch["P"])),
            "page-rate": fmt(as_float(ch["p_rate"], "1/s")), "top-stage": order[0][0], "second-stage": order[1][0],
            "top-share": pct(ch["f_e"]), "second-cores": fmt(math.ceil(as_float(ch[order[1][1]]))),
            "clean-throughput": fmt(ch["X_clean"]), "text-share": pct(ch["k_e"])}


def boundary_rows(ch) -> list[tuple]:
    rows = [("crawl as stored (gzip WARC)", "W_stored"), ("crawl HTML, uncompressed", "W_raw"),
            ("extracted text", "W_text"), ("after language ID", "W_lang"), ("after quality filters", "W_qual"),
            ("clean text (after dedup)", "W_clean"), ("token shards", "S")]
    return [(name, fmt(ch[key].to("B"), style="eng"), pct(as_float(ch[key] / ch["W_raw"], ""), 2)) for name, key in rows]


def stage_rows(ch) -> list[tuple]:
    return [(name, fmt(ch[w].to("B"), style="eng"), fmt((ch[w] / ch["t"]).to("B/s"), style="eng"),
             fmt(math.ceil(as_float(ch[n])))) for name, n, w in STAGES]


def check_texts() -> dict:
    c, r = claim_chains(), read_rate()
    four, two = c["four_byte"], c["two_byte"]
    ckpt_bw = q(5, "TB") / q(60, "s")    # the bill-of-materials claim: a 5 TB checkpoint in under a minute
    return {"two-byte-shards": fmt(two["S"]), "llama2-vocab": fmt(q(vocab(catalog.model("llama-2-7b")), "")),
            "llama2-clean": fmt(two["W_clean"]), "four-byte-shards": fmt(four["S"]), "packed-shards": fmt(c["packed"]["S"]),
            "claim-stored": fmt(four["W_stored"].to("PB")), "claim-raw": fmt(four["W_raw"].to("PB")),
            "claim-text": fmt(four["W_text"].to("PB")), "bom-gpus": fmt(q(r["gpus"], "GPU")), "bom-mfu": pct(BOM_MFU),
            "bom-rate": short(as_float(r["bom"], "token/s")), "meta-gpus": fmt(q(r["meta_gpus"], "GPU")),
            "meta-rate": short(as_float(r["meta"], "token/s")), "claim-days": fmt(four["T_train"]),
            "claimed-rate-days": fmt(c["claimed_rate"]["T_train"]),
            "claim-read": fmt(four["B_read"]), "claim-read-2b": fmt(two["B_read"]), "ckpt-bw": fmt(ckpt_bw.to("GB/s")),
            "read-vs-ckpt": pct(as_float(four["B_read"] / ckpt_bw, ""), digits=2), "tectonic": fmt(r["tectonic"]),
            "pipeline-runs": f"{as_float(four['T_train'] / four['t'], ''):.1f}"}


def run_with(p, **over) -> Chain:
    return data_pipeline(**{**{n: p[n] for n in INPUTS}, **over})


KE_LOW, KE_HIGH = 0.015, 0.06


def what_changes(p, ch) -> dict:
    import sympy as sp
    lo, hi = run_with(p, keep_extract=KE_LOW), run_with(p, keep_extract=KE_HIGH)
    fast = 10 * p.rate_extract
    # The extraction rate at which the next-busiest stage needs as many cores (solved, not swept).
    r_x = sp.symbols("r_x", positive=True)
    others = max(as_float(ch[s[1]]) for s in STAGES[1:])
    r_cross = sp.solve(sp.Eq(as_float(ch["W_raw"], "MB") / (r_x * as_float(ch["t"], "s")), others), r_x)[0]
    return {"ke-low": pct(KE_LOW), "ke-high": pct(KE_HIGH), "ke-low-raw": fmt(lo["W_raw"].to("PB")),
            "ke-low-stored": fmt(lo["W_stored"].to("PB")), "ke-high-raw": fmt(hi["W_raw"].to("PB")),
            "ke-high-stored": fmt(hi["W_stored"].to("PB")), "rate-fast": fmt(q(fast, "MB/s")),
            "rate-fast-cores": counted(math.ceil(as_float(run_with(p, rate_extract=fast)["n_e"])), "cores"),
            "rate-crossover": fmt(q(float(r_cross), "MB/s")),
            "width-2": fmt(run_with(p, bytes_per_token_id=2.0)["S"]),
            "width-4": fmt(run_with(p, bytes_per_token_id=4.0)["S"])}


EX1_VOCAB, EX2_CORES = 256000, 1024


def exercises(p, ch) -> dict:
    bits = bits_for(EX1_VOCAB)
    width = next(w for w in (1, 2, 4, 8) if 8 * w >= bits)
    core_s = {s[0]: as_float(ch[s[1]]) * as_float(ch["t"], "s") for s in STAGES}
    all_s = sum(core_s.values())
    stored_rate = (ch["W_stored"] / ch["t"]).to("GB/s")
    return {"ex1-vocab": fmt(q(EX1_VOCAB, "")), "intro-tokens-2": short(p.tokens) + " tokens",
            "ex1-bits": str(bits), "ex1-bytes": str(width),
            "ex1-shards": fmt(run_with(p, bytes_per_token_id=float(width))["S"]),
            "ex1-packed": fmt((q(p.tokens, "token") * q(bits / 8, "B/token")).to("TB")),
            "ex2-cores": counted(EX2_CORES, "cores"), "ex2-core-days": counted(core_s["extraction"] / 86400, "core-days"),
            "ex2-all-core-days": counted(all_s / 86400, "core-days"), "ex2-days": fmt(q(all_s / EX2_CORES / 86400, "day")),
            "ex3-read": fmt(stored_rate), "ex3-gbit": fmt(stored_rate.to("Gbit/s"))}


SPEC = Spec("data-pipeline-15t", PARAMETERS, RESULTS, compute, validate=validate, closed_form=True)
