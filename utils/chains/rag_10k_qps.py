"""rag-10k-qps: four stages at ten thousand queries a second, three fleets sized from the work each does,
and the cache that decides the answer-model tier.

The embedder is sized from query tokens, the reranker from query-passage pairs, the index from bytes and
the answer model from prefill and decode tokens: prefill compute-bound at an MFU, decode at the largest
batch that fits the KV budget (utils.serving: a share of the driver-reported memory) and keeps a step
within the time per output token. A semantic answer cache after the embedder scales the index, the
reranker and the answer model by 1 - h.
"""
from __future__ import annotations

import math

from utils import catalog, models, serving
from utils.chain import Chain, as_float, memoised
from utils.params import Param, ParameterError, Result, Spec
from utils.roofline import Chip, add_fraction_inputs, fraction_params, time_floor
from utils.units import fmt, pct, q, short
from utils.verdicts import UNCHECKABLE, Claim

READ = "read 2026-11-30"
# BAAI/bge-large-en-v1.5, a BERT-large embedder: 24 layers, 1024 wide, FFN 4096, 512 positions, 1024-dim output.
ENCODER = dict(n_layers=24, d_model=1024, d_ff=4096, max_positions=512, dim=1024)
ENCODER_SOURCE = ("BAAI/bge-large-en-v1.5 config.json (BertModel: num_hidden_layers 24, hidden_size 1024, "
                  "intermediate_size 4096, max_position_embeddings 512), https://huggingface.co/BAAI/"
                  f"bge-large-en-v1.5/blob/main/config.json, {READ}")
RERANKER_SOURCE = ("this book's assumption: a cross-encoder on the same BERT-large stack as the embedder (the "
                   "24-layer, 1024-wide body that BAAI/bge-reranker-large also has under its larger multilingual "
                   "vocabulary, which is looked up, not multiplied)")
PASSAGE_SOURCE = ("this book's assumption: DPR's hundred-word Wikipedia passage (Karpukhin et al., Dense Passage "
                  f"Retrieval, EMNLP 2020, arXiv:2004.04906, section 4.1) at about 1.3 tokens a word, {READ}")
PASSAGES_SOURCE = ("this book's assumption: the top three reranked passages, a common choice; RAG (Lewis et al., "
                   "NeurIPS 2020, arXiv:2005.11401) gives its generator five to ten, which makes the tier larger. "
                   "Chosen near the claim's tier, so the check does not rest the claim's absolute sizes on it")
QUESTION_SOURCE = "this book's assumption: a question of a sentence or two"
ANSWER_SOURCE = "this book's assumption: a paragraph of answer"
MFU_ENC_SOURCE = ("this book's assumption: below the answer model's, since a 1024-wide encoder's matrix products "
                  "are smaller and its sequences short")
SLO_SOURCE = serving.mlperf_limits_source()
_MLPERF = catalog.entry("software", "mlperf-inference")     # the figures SLO_SOURCE cites
MLPERF_INTERACTIVE = {name: as_float(_MLPERF.q(f"llama2_70b_interactive_{field}"), "s")
                      for name, field in (("ttft_s", "ttft"), ("tpot_s", "tpot"))}
E2E_SOURCE = ("J. Nielsen, Response Times: The 3 Important Limits (from Usability Engineering, 1993): one second "
              "is about the limit for the user's flow of thought to stay uninterrupted, https://www.nngroup.com/"
              f"articles/response-times-3-important-limits/, {READ}")
BUDGET_SOURCE = "this book's assumption: a split of the end-to-end objective (below)"
CANDIDATES_SOURCE = "this book's assumption: the reranker rescores the ANN search's top hundred"
CORPUS_SOURCE = ("this book's assumption: a corpus big enough to need sharding, about fifty times DPR's "
                 "Wikipedia (21M passages)")
VEC_BYTES_SOURCE = "this book's assumption: vectors stored in fp16, no compression"
GRAPH_SOURCE = ("hnswlib ALGO_PARAMS.md: the graph's memory is roughly M x 8-10 bytes per stored element, M of "
                f"12-48 fits most uses; here M = 32 at 10 bytes, https://github.com/nmslib/hnswlib/blob/master/"
                f"ALGO_PARAMS.md, {READ}")
HNSW_M, HNSW_BYTES_PER_LINK = 32, 10                     # from GRAPH_SOURCE
HOST_SOURCE = ("this book's assumption: a host with a terabyte of memory, half of it for the index (the rest for "
               "the OS, the service and a second copy while an index is rebuilt)")
SHARD_QPS_SOURCE = ("this book's assumption: the order of HNSW throughput at high recall on a many-core host; "
                    "the weakest input on this page")
SEMANTIC_SOURCE = ("GPT Semantic Cache (Regmi and Pun, 2024, arXiv:2411.05276v2): cache hit rates from 61.6% to "
                   f"68.8% across four query categories of a customer-service-style test set, {READ}")
SEMANTIC_HITS = (0.616, 0.688)                            # from SEMANTIC_SOURCE
CLAIM_SOURCE = "spec/000, the paragraph on RAG at ten thousand queries a second"
MODELS_SOURCE = "counted from the catalog config by utils.models"
GPN_SOURCE = "this book's assumption: one HGX node"


PARAMETERS = (
    Param("qps", 10000.0, "queries per second arriving at the service", unit="1/s", source=CLAIM_SOURCE),
    Param("model", "llama-3-70b", "answer model: a catalog key or a config.json path", check="model",
          source="catalog: Llama-3-70B, the claim's 70B answer model"),
    Param("gpu", "h100-sxm", "accelerator for every GPU fleet: a catalog key or a spec file", check="accelerator",
          source="catalog: H100 SXM, this book's assumption"),
    Param("gpus_per_node", 8, "GPUs per node; one answer-model replica per node (tensor parallel)", unit="GPU",
          check="whole", source=GPN_SOURCE),
    Param("passages", 3, "reranked passages placed in the answer model's prompt", check="whole", source=PASSAGES_SOURCE),
    Param("passage_tokens", 128, "tokens per passage", unit="token", check="whole", source=PASSAGE_SOURCE),
    Param("question_tokens", 32, "tokens per question", unit="token", check="whole", source=QUESTION_SOURCE),
    Param("answer_tokens", 128, "tokens per answer", unit="token", check="whole", source=ANSWER_SOURCE),
    *fraction_params(),     # the answer model's prefill and decode run at the shared achieved shares of the peaks
    Param("cache_hit_rate", 0.7, "share of queries the semantic answer cache answers", check="share",
          source="the claim's own two numbers: one less sixty over two hundred; " + SEMANTIC_SOURCE),
    Param("rerank_candidates", 100, "ANN candidates the cross-encoder scores per query", check="whole",
          source=CANDIDATES_SOURCE),
    Param("tpot_s", 0.04, "time per output token the answer model must stream at", unit="s", source=SLO_SOURCE),
    Param("mfu_encoder", 0.4, "embedder's and reranker's utilisation of the dense bf16 rate, counting 2N per token "
          "plus attention (the chain's encoder FLOPs)", check="fraction",
          source=MFU_ENC_SOURCE),
    Param("corpus_passages", 1e9, "passages in the vector index", source=CORPUS_SOURCE),
    Param("embedding_dim", 1024, "dimensions per embedding", check="whole", source=ENCODER_SOURCE),
    Param("embedding_bytes", 2, "bytes per dimension stored in the index (2 = fp16)", unit="byte", check="whole",
          source=VEC_BYTES_SOURCE),
    Param("index_host_gb", 512.0, "host memory one index shard may fill", unit="GB", source=HOST_SOURCE),
    Param("shard_qps", 2000.0, "queries per second one replica of one shard answers", unit="1/s",
          source=SHARD_QPS_SOURCE),
)
CLAIM = {prm.name: prm.default for prm in PARAMETERS}   # the page's reading of what the claim leaves unnamed
CLAIMED = dict(llm_nodes_low=60, llm_nodes_high=200)    # the numbers the claim asserts

RESULTS = (
    Result("llm_nodes_no_cache", "node", "Answer-model nodes without a cache (busy)", of="N_0"),
    Result("llm_nodes_with_cache", "node", "Answer-model nodes behind the answer cache", of="N_h"),
    Result("embedder_gpus", "GPU", "Embedder GPUs (every query is embedded)", of="G_emb"),
    Result("reranker_gpus", "GPU", "Reranker GPUs behind the answer cache", of="G_rr"),
    Result("reranker_gpus_no_cache", "GPU", "Reranker GPUs without a cache", of="G_rr0"),
    Result("index_bytes", "byte", "Vector-index bytes (vectors and graph)", of="B_idx"),
    Result("index_hosts", "", "Index hosts (shards x replicas, behind the cache)", of="H_n"),
    Result("llm_decode_tokens_per_node", "token/s", "Decode tokens a second per node", of="X_d"),
    Result("prefill_share", "", "Prefill's share of answer-model node time", of="s_pf", percent=True),
)


def validate(p):
    if p.cache_hit_rate >= 1:
        raise ParameterError(f"cache_hit_rate must be below 1 (some query must miss), got {p.cache_hit_rate!r}")
    if p.passages > p.rerank_candidates:
        raise ParameterError(f"passages={p.passages} must not exceed rerank_candidates={p.rerank_candidates}: "
                             "the prompt takes the top passages of those reranked")
    ctx = int(p.model.q("max_context").m)
    if p.passages * p.passage_tokens + p.question_tokens + p.answer_tokens > ctx:
        raise ParameterError(f"a prompt of {p.passages} x {p.passage_tokens} + {p.question_tokens} tokens and an "
                             f"answer of {p.answer_tokens} exceed {p.model.name}'s context of {ctx} tokens")
    if p.question_tokens + p.passage_tokens > ENCODER["max_positions"]:
        raise ParameterError(f"a question-passage pair of {p.question_tokens} + {p.passage_tokens} tokens exceeds the "
                             f"reranker's {ENCODER['max_positions']} positions")
    for field in ("bf16_dense", "hbm_bandwidth", "hbm_capacity"):
        if field not in p.gpu:
            raise ParameterError(f"gpu {p.gpu.key!r} has no {field} in the catalog")


C2 = q(2, "FLOP/parameter/token")      # one multiply-add per weight per token
A_ENC = q(4, "FLOP/token**2")          # bidirectional attention: QK^T and AV, 2 T d each, per token per layer
A_CAUSAL = q(2, "FLOP/token**2")       # causal prefill of T tokens: 2 T^2 d per layer in all
A_DEC = q(4, "FLOP/token**2")          # a decode token attending to a context of T: 4 T d per layer


def encoder_matmul_params(enc):
    # Weights a BERT-style encoder token is multiplied by: Q, K, V, O (4 d^2) and the FFN (2 d d_ff) per layer.
    d, L, ff = enc["d_model"], enc["n_layers"], enc["d_ff"]
    return q(L * (4 * d * d + 2 * d * ff), "parameter")


def encoder_chain(qps, gpu, question_tokens, passage_tokens, rerank_candidates, cache_hit_rate, mfu_encoder,
                  *, source="parameters cell"):
    acc = gpu
    ch = Chain(f"Embedder and reranker fleets on {acc.name}")
    ch.given("Q", q(qps, "1/s"), "queries per second", kind="spec" if qps == CLAIM["qps"] else "assumption",
             source=CLAIM_SOURCE if qps == CLAIM["qps"] else source)
    ch.given("h", cache_hit_rate, "answer-cache hit rate", kind="assumption",
             source=SEMANTIC_SOURCE if cache_hit_rate == CLAIM["cache_hit_rate"] else source)
    ch.given("N_e", encoder_matmul_params(ENCODER), "encoder weights multiplied per token", kind="derived",
             source=ENCODER_SOURCE)
    ch.given("L_e", ENCODER["n_layers"], "encoder layers", kind="spec", source=ENCODER_SOURCE)
    ch.given("d_e", ENCODER["d_model"], "encoder width", kind="spec", source=ENCODER_SOURCE)
    ch.given("c", C2, "FLOPs per weight per token", kind="derived", source="a matrix product")
    ch.given("a_e", A_ENC, "encoder attention FLOPs per token, per context token, per layer and width",
             kind="derived", source="QK^T and AV in both directions")
    ch.given("P", acc.q("bf16_dense") / q(1, "GPU"), "dense bf16 rate per GPU", kind=acc["bf16_dense"].kind,
             source=acc["bf16_dense"].cite)
    ch.given("g_1", q(1, "GPU"), "one GPU", kind="derived", source="a latency floor runs on one GPU")
    ch.given("eta_e", mfu_encoder, "encoder MFU", kind="assumption",
             source=MFU_ENC_SOURCE if mfu_encoder == CLAIM["mfu_encoder"] else source)
    ch.step("P_e", "eta_e*P", "TFLOP/s/GPU", "sustained encoder rate per GPU")
    ch.given("q_t", q(question_tokens, "token"), "question tokens", kind="assumption",
             source=QUESTION_SOURCE if question_tokens == CLAIM["question_tokens"] else source)
    ch.step("f_q", "c*N_e + a_e*L_e*d_e*q_t", "GFLOP/token", "embedder FLOPs per query token")
    ch.step("X_q", "Q*q_t", "token/s", "query tokens a second: the embedder's work")
    ch.step("w_e", "X_q*f_q/P_e", "GPU", "embedder work, in busy GPUs")
    ch.step("G_emb", "ceiling(w_e/g_1)*g_1", "GPU", "embedder GPUs")
    ch.given("m", rerank_candidates, "candidates reranked per query", kind="assumption",
             source=CANDIDATES_SOURCE if rerank_candidates == CLAIM["rerank_candidates"] else source)
    ch.given("p_t", q(passage_tokens, "token"), "tokens per passage", kind="assumption",
             source=PASSAGE_SOURCE if passage_tokens == CLAIM["passage_tokens"] else source)
    ch.step("T_r", "q_t + p_t", "token", "tokens per pair (question and passage)")
    ch.step("f_r", "c*N_e + a_e*L_e*d_e*T_r", "GFLOP/token", "reranker FLOPs per pair token")
    ch.step("Y_0", "Q*m", "1/s", "pairs a second without the cache: the reranker's work")
    ch.step("w_r", "Y_0*T_r*f_r/P_e", "GPU", "reranker work without the cache, in busy GPUs")
    ch.step("G_rr0", "ceiling(w_r/g_1)*g_1", "GPU", "reranker GPUs without the cache")
    ch.step("G_rr", "ceiling((1 - h)*w_r/g_1)*g_1", "GPU", "reranker GPUs behind the answer cache")
    ch.step("t_rr", "m*T_r*f_r/(P_e*g_1)", "ms", "one query's pairs on one GPU: the reranker's latency floor")
    ch.step("t_emb", "q_t*f_q/(P_e*g_1)", "ms", "one query on one GPU: the embedder's compute floor")
    return ch


def index_chain(qps, cache_hit_rate, corpus_passages, embedding_dim, embedding_bytes, index_host_gb, shard_qps,
                *, source="parameters cell"):
    ch = Chain("Sharded vector index")
    ch.given("Q", q(qps, "1/s"), "queries per second", kind="spec" if qps == CLAIM["qps"] else "assumption",
             source=CLAIM_SOURCE if qps == CLAIM["qps"] else source)
    ch.given("h", cache_hit_rate, "answer-cache hit rate", kind="assumption",
             source=SEMANTIC_SOURCE if cache_hit_rate == CLAIM["cache_hit_rate"] else source)
    ch.given("V", corpus_passages, "passages indexed", kind="assumption",
             source=CORPUS_SOURCE if corpus_passages == CLAIM["corpus_passages"] else source)
    ch.given("D_v", embedding_dim, "dimensions per vector", kind="spec" if embedding_dim == ENCODER["dim"]
             else "assumption", source=ENCODER_SOURCE if embedding_dim == ENCODER["dim"] else source)
    ch.given("b_v", q(embedding_bytes, "byte"), "bytes per dimension", kind="assumption",
             source=VEC_BYTES_SOURCE if embedding_bytes == CLAIM["embedding_bytes"] else source)
    ch.given("b_g", q(HNSW_M * HNSW_BYTES_PER_LINK, "byte"), "graph bytes per vector (HNSW links)",
             kind="spec", source=GRAPH_SOURCE)
    ch.step("B_idx", "V*(D_v*b_v + b_g)", "TB", "index bytes")
    ch.given("H", q(index_host_gb, "GB"), "memory one shard may fill", kind="assumption",
             source=HOST_SOURCE if index_host_gb == CLAIM["index_host_gb"] else source)
    ch.step("S_x", "B_idx/H", "", "host memories the index fills")
    ch.step("S", "ceiling(S_x)", "", "shards")
    ch.given("q_s", q(shard_qps, "1/s"), "queries a second one shard replica answers", kind="assumption",
             source=SHARD_QPS_SOURCE if shard_qps == CLAIM["shard_qps"] else source)
    ch.step("R_x", "(1 - h)*Q/q_s", "", "shard replicas' worth of queries (every query visits every shard)")
    ch.step("R_s", "ceiling(R_x)", "", "replicas per shard")
    ch.step("H_n", "S*R_s", "", "index hosts")
    return ch


def llm_chain(qps, model, gpu, gpus_per_node, passages, passage_tokens, question_tokens, answer_tokens,
              compute_fraction, bandwidth_fraction, cache_hit_rate, tpot_s, *, source="parameters cell"):
    m, acc = model, gpu
    n = models.param_count(m)
    ch = Chain(f"Answer-model tier: {m.name} on nodes of {gpus_per_node} x {acc.name}")
    ch.given("Q", q(qps, "1/s"), "queries per second", kind="spec" if qps == CLAIM["qps"] else "assumption",
             source=CLAIM_SOURCE if qps == CLAIM["qps"] else source)
    ch.given("h", cache_hit_rate, "answer-cache hit rate", kind="assumption",
             source=SEMANTIC_SOURCE if cache_hit_rate == CLAIM["cache_hit_rate"] else source)
    ch.given("k", passages, "passages in the prompt", kind="assumption",
             source=PASSAGES_SOURCE if passages == CLAIM["passages"] else source)
    ch.given("p_t", q(passage_tokens, "token"), "tokens per passage", kind="assumption",
             source=PASSAGE_SOURCE if passage_tokens == CLAIM["passage_tokens"] else source)
    ch.given("q_t", q(question_tokens, "token"), "question tokens", kind="assumption",
             source=QUESTION_SOURCE if question_tokens == CLAIM["question_tokens"] else source)
    ch.given("o", q(answer_tokens, "token"), "answer tokens", kind="assumption",
             source=ANSWER_SOURCE if answer_tokens == CLAIM["answer_tokens"] else source)
    ch.step("T_in", "k*p_t + q_t", "token", "prompt per query: passages and question")
    # --- Prefill: compute-bound.
    ch.given("N_a", n["active"], "weights multiplied per token", kind="derived", source=MODELS_SOURCE)
    ch.given("L", int(m.q("n_layers").m), "layers", kind="spec", source=m["n_layers"].cite)
    ch.given("d_a", int((m.q("n_heads") * m.q("head_dim")).m), "attention width (query heads x head dim)",
             kind="spec", source=m["n_heads"].cite)
    ch.given("c", C2, "FLOPs per weight per token", kind="derived", source="a matrix product")
    ch.given("a_c", A_CAUSAL, "causal prefill attention FLOPs per token pair, per layer and width",
             kind="derived", source="the prefix-caching chapter's count")
    ch.step("F_pf", "c*N_a*T_in + a_c*L*d_a*T_in**2", "TFLOP", "prefill FLOPs per query")
    gpn_source = GPN_SOURCE if gpus_per_node == CLAIM["gpus_per_node"] else source
    ch.given("g", q(gpus_per_node, "GPU"), "GPUs per node (one replica)", kind="assumption", source=gpn_source)
    ch.given("P", acc.q("bf16_dense") / q(1, "GPU"), "dense bf16 rate per GPU", kind=acc["bf16_dense"].kind,
             source=acc["bf16_dense"].cite)
    add_fraction_inputs(ch, compute_fraction, bandwidth_fraction, source=source)
    ch.step("t_pf", "F_pf/(eta_P*g*P)", "ms", "node time per query's prefill")
    # --- Decode: a batch set by the KV budget and the time per output token.
    mem = serving.gpu_memory(acc, "driver")
    ch.given("C", mem.total.to("GB") / q(1, "GPU"), mem.label, kind=mem.kind, source=mem.source)
    ch.given("u", serving.vllm_utilization_value(), "share of that memory the engine manages (vLLM's default)")
    ch.given("N_s", n["total"], "weights stored", kind="derived", source=MODELS_SOURCE)
    ch.given("N_r", n["total"] - n["embedding"], "weights read per step (all but the embedding lookup)",
             kind="derived", source=MODELS_SOURCE)
    ch.given("b_w", q(2, "byte/parameter"), "bytes per weight (bf16)", kind="assumption", source="the claim's reading")
    ch.step("M_kv", "g*C*u - N_s*b_w", "GB", "KV budget per node, at most")
    if ch["M_kv"].m <= 0:
        raise ParameterError(f"{m.name} in bf16 does not fit {gpus_per_node} x {acc.name} at vLLM's memory share: "
                                    "raise gpus_per_node")
    ch.given("kappa", models.kv_bytes_per_token(m, 2), "KV per token, all layers (bf16)", kind="derived",
             source=MODELS_SOURCE)
    ch.given("rho", models.kv_copies(m, gpus_per_node), "copies of each token's KV the node keeps", kind="derived",
             source="utils.models.kv_copies (KV heads split over the GPUs, copied once they run out)")
    ch.given("tau", q(1, "token/sequence"), "tokens per sequence per step", kind="derived",
             source="decode: one token per sequence per step")
    ch.given("s_1", q(1, "sequence"), "one sequence", kind="derived", source="a count")
    ch.step("T_f", "T_in + o", "token", "context a sequence holds at its end")
    ch.step("n_kv", "M_kv/(rho*kappa*T_f)", "", "full caches the budget holds")
    ch.step("B_kv", "floor(n_kv)*s_1", "sequence", "sequences whose caches fit")
    ch.step("T_d", "T_in + o/2", "token", "mean context while decoding")
    ch.given("W", acc.q("hbm_bandwidth") / q(1, "GPU"), "HBM bandwidth per GPU",
             kind=acc["hbm_bandwidth"].kind, source=acc["hbm_bandwidth"].cite)
    ch.given("a_d", A_DEC, "decode attention FLOPs per context token, per layer and width", kind="derived",
             source="QK^T and AV for one query token")
    ch.step("f_d", "c*N_a + a_d*L*d_a*T_d", "GFLOP/token", "FLOPs per decode token")
    ch.step("t_w", "N_r*b_w/(eta_W*g*W)", "ms", "weight read per decode step")
    ch.step("t_kv", "rho*kappa*T_d/(eta_W*g*W*s_1)", "us/sequence", "cache read per sequence per step")
    ch.step("t_f", "f_d*tau/(eta_P*g*P)", "us/sequence", "compute per sequence per step")
    ch.given("L_t", q(tpot_s, "s").to("ms"), "time per output token objective", kind="assumption",
             source=SLO_SOURCE if tpot_s == MLPERF_INTERACTIVE["tpot_s"] else source)
    if ch["t_w"] >= ch["L_t"]:
        raise ParameterError(f"tpot_s={tpot_s:g}: reading {m.name}'s weights alone takes "
                                    f"{fmt(ch['t_w'])} a step on {gpus_per_node} x {acc.name}")
    ch.solve("B_b", "t_w + B_b*t_kv = L_t", "sequence", "batch whose reads fill the objective")
    ch.solve("B_c", "B_c*t_f = L_t", "sequence", "batch whose FLOPs fill the objective")
    ch.step("B", "floor(Min(B_kv, B_b, B_c))", "sequence", "decode batch per node")
    if ch["B"].m < 1:
        raise ParameterError("not one sequence fits a node's KV budget: shorten the prompt or the answer")
    ch.step("t_s", "Max(t_w + B*t_kv, B*t_f)", "ms", "decode step at that batch")
    ch.step("X_d", "B*tau/t_s", "token/s", "decode tokens a second per node")
    ch.step("t_dc", "o/X_d", "ms", "node time per query's answer")
    # --- The tier: prefill and decode node-seconds add; the cache scales both.
    ch.given("n", q(gpus_per_node, "GPU/node"), "GPUs per node", kind="assumption", source=gpn_source)
    ch.step("s_pf", "t_pf/(t_pf + t_dc)", "", "prefill's share of the node time")
    ch.step("N_pf", "Q*t_pf*g/n", "node", "busy nodes prefilling")
    ch.step("N_dc", "Q*t_dc*g/n", "node", "busy nodes decoding")
    ch.step("N_0", "ceiling(N_pf + N_dc)", "node", "answer-model nodes without a cache")
    ch.step("N_h", "ceiling((1 - h)*(N_pf + N_dc))", "node", "answer-model nodes behind the answer cache")
    # --- The other cache: the passages' KV, reused (position-independent), skips their prefill only.
    ch.step("F_kv", "c*N_a*k*p_t + a_c*L*d_a*(k*p_t)**2", "TFLOP", "prefill FLOPs a query's passages take")
    ch.step("N_kv", "Q*F_kv/(eta_P*P*n)", "node", "busy nodes a passage-KV cache could save at every hit")
    ch.step("N_kvmin", "ceiling(N_pf + N_dc - N_kv)", "node", "nodes with every passage's KV cached, no answer cache")
    return ch


# The headline results of the encoder and index chains, read through the answer model's chain.
ENC_RESULTS, IDX_RESULTS = ("G_emb", "G_rr", "G_rr0"), ("B_idx", "H_n")


def rag(p, source: str = "parameters cell") -> Chain:
    """The three chains for checked inputs p: the answer model's, holding the encoder's and the index's chains
    (data["enc"], data["idx"]) and their headline results, so one Chain indexes every result."""
    enc = encoder_chain(p.qps, p.gpu, p.question_tokens, p.passage_tokens, p.rerank_candidates, p.cache_hit_rate,
                        p.mfu_encoder, source=source)
    idx = index_chain(p.qps, p.cache_hit_rate, p.corpus_passages, p.embedding_dim, p.embedding_bytes,
                      p.index_host_gb, p.shard_qps, source=source)
    ch = llm_chain(p.qps, p.model, p.gpu, p.gpus_per_node, p.passages, p.passage_tokens, p.question_tokens,
                   p.answer_tokens, p.compute_fraction, p.bandwidth_fraction, p.cache_hit_rate, p.tpot_s,
                   source=source)
    for names, part in ((ENC_RESULTS, enc), (IDX_RESULTS, idx)):
        for name in names:
            ch.value(name, part[name])
    ch.data.update(enc=enc, idx=idx)
    return ch


def compute(p) -> Chain:
    return rag(p)


def inputs(**changes):
    """The claim's reading with changes, checked."""
    return SPEC.check(**{**CLAIM, **changes})


def variant(p, **changes):
    """The reader's parameters with changes: the chains, or the one-line reason they cannot be built."""
    raw = {name: (v.key if hasattr(v, "key") else v) for name, v in p.items()}
    try:
        return rag(SPEC.check(**{**raw, **changes}), source="variant")
    except ParameterError as err:
        return str(err)


def nodes_f(ch, h=0.0, h_kv=0.0):
    """Busy answer-model nodes (continuous) at an answer-cache hit rate h and a passage-KV hit rate h_kv."""
    base = as_float(ch["N_pf"] + ch["N_dc"], "node")
    return (1 - h) * (base - h_kv * as_float(ch["N_kv"], "node"))


def bound(ch) -> str:
    return "compute" if ch["B"] * ch["t_f"] >= ch["t_w"] + ch["B"] * ch["t_kv"] else "bandwidth"


def chain_texts(f: Chain, p) -> dict:
    enc, idx, ch = f.data["enc"], f.data["idx"], f
    hkv_same = p.cache_hit_rate * nodes_f(ch) / as_float(ch["N_kv"], "node")   # passage hits for the same tier
    n_gpus = as_float(ch["N_0"], "node") * p.gpus_per_node
    return {"intro-qps": f"{fmt(p.qps)} queries a second", "intro-model": p.model.name,
            "intro-gpn": str(p.gpus_per_node), "intro-gpu": p.gpu.name, "intro-hit": pct(p.cache_hit_rate),
            "intro-kv": (f"would have to hit on {pct(hkv_same)} of retrieved passages to do as much" if hkv_same <= 1
                         else "cannot do as much, even with every passage cached"),
            "explain-q": fmt(enc["f_q"] * enc["q_t"], "GFLOP"), "p-tin": fmt(ch["T_in"]), "p-fpf": fmt(ch["F_pf"]),
            "p-tpf": fmt(ch["t_pf"]), "p-bkv": fmt(as_float(ch["B_kv"], "sequence")),
            "p-bb": fmt(float(math.floor(as_float(ch["B_b"], "sequence")))),
            "p-bc": fmt(float(math.floor(as_float(ch["B_c"], "sequence")))),
            "p-b": fmt(as_float(ch["B"], "sequence")), "p-bound": bound(ch), "p-ts": fmt(ch["t_s"]),
            "p-xd": fmt(ch["X_d"]), "p-tdc": fmt(ch["t_dc"]), "p-npf": fmt(as_float(ch["N_pf"], "node"), digits=3),
            "p-ndc": fmt(as_float(ch["N_dc"], "node"), digits=3), "p-xq": fmt(enc["X_q"]),
            "p-pairs": fmt(as_float(enc["Y_0"] * enc["T_r"], "token/s")), "p-pair-tokens": fmt(enc["T_r"]),
            "p-rr-ratio": fmt(as_float(enc["Y_0"] * enc["T_r"] / enc["X_q"], "")), "p-shards": fmt(idx["S"]),
            "p-rs": fmt(idx["R_s"]), "p-llm-gpus": fmt(n_gpus),
            "p-rr-share": pct(as_float(enc["G_rr0"], "GPU") / n_gpus)}


# --- the latency budget ---------------------------------------------------------------------------
E2E_S = 1.0            # the end-to-end objective to the first answer token (E2E_SOURCE)
BUDGET_S = {"gateway and network": 0.05, "embed the question": 0.025, "ANN search (fan-out to every shard)": 0.075,
            "rerank the candidates": 0.15, "answer model: time to first token": MLPERF_INTERACTIVE["ttft_s"]}
BUDGET_S["reserve (retries, tail)"] = E2E_S - sum(BUDGET_S.values())


def enc_floor(e, flops_at_mfu, gpu) -> float:
    """One query's encoder work on one GPU: the larger of its FLOPs at the MFU and one read of the weights."""
    weights = e["N_e"] * q(2, "byte/parameter")
    return max(as_float(flops_at_mfu, "s"), as_float(weights / gpu.q("hbm_bandwidth"), "s"))


def floors(f: Chain, gpu) -> dict:
    """Each stage's time without queueing (seconds): its work on one GPU (encoders) or one node."""
    e, c = f.data["enc"], f
    return {"gateway and network": None, "embed the question": enc_floor(e, e["t_emb"], gpu),
            "ANN search (fan-out to every shard)": None, "rerank the candidates": enc_floor(e, e["t_rr"], gpu),
            "answer model: time to first token": as_float(c["t_pf"] + c["t_s"], "s"), "reserve (retries, tail)": None}


def budget_table(f: Chain, gpu) -> str:
    rows, fl = [], floors(f, gpu)
    for stage, b in BUDGET_S.items():
        rows.append(f"| {stage} | {fmt(q(b, 's').to('ms'))} | "
                    + (f"{fmt(q(fl[stage], 's').to('ms'))} | {fmt(b / fl[stage])} |" if fl[stage] else "not derived here | |"))
    return ("| stage | budget | floor | budget / floor |\n|---|---|---|---|\n" + "\n".join(rows)
            + f"\n| **end to end** | **{fmt(q(sum(BUDGET_S.values()), 's').to('ms'))}** | | |")


def latency_texts() -> dict:
    """The latency prose, on the claim's reading; every derived floor fits inside its budget there."""
    fl = floors(rag(inputs(), source="the claim's reading"), catalog.accelerator(CLAIM["gpu"]))
    assert abs(sum(BUDGET_S.values()) - E2E_S) < 1e-12 and BUDGET_S["reserve (retries, tail)"] >= 0
    assert all(v is None or v < BUDGET_S[st] for st, v in fl.items())
    tightest = min((BUDGET_S[st] / v, st) for st, v in fl.items() if v)[1]
    assert tightest == "rerank the candidates"
    rr = BUDGET_S["rerank the candidates"]
    ttft = BUDGET_S["answer model: time to first token"]
    return {"lat-e2e": fmt(q(E2E_S, "s").to("ms")), "lat-ttft": fmt(q(ttft, "s").to("ms")),
            "lat-llm-floor": fmt(q(fl["answer model: time to first token"], "s").to("ms")),
            "lat-rr": fmt(q(rr, "s").to("ms")), "lat-rr-floor": fmt(q(fl["rerank the candidates"], "s").to("ms")),
            "lat-rr-tight": fmt(rr / fl["rerank the candidates"]), "lat-tpot": fmt(q(CLAIM["tpot_s"], "s").to("ms"))}


# --- the claim ------------------------------------------------------------------------------------
QUOTE = ("Ten thousand queries a second through an embedder, a sharded vector index, a reranker and a 70B "
         "answer model. The latency budget per stage, the two fleets sized from tokens and pairs rather than "
         "queries, and the cache that decides whether the LLM tier is 60 nodes or 200.")


def step_time(ch, B: int, gpu) -> float:
    """Second route: one decode step of B sequences per GPU of the node on utils.roofline.time_floor."""
    g = as_float(ch["g"], "GPU")
    chip = Chip(gpu.key, gpu.name, gpu.q("bf16_dense").to("FLOP/s") * as_float(ch["eta_P"]),
                gpu.q("hbm_bandwidth").to("byte/s") * as_float(ch["eta_W"]))      # the roofline at the achieved shares
    flops = B * ch["f_d"] * q(1, "token") / g
    bytes_ = (ch["N_r"] * ch["b_w"] + B * ch["rho"] * ch["kappa"] * ch["T_d"]) / g
    return as_float(time_floor(flops, bytes_, chip)[0], "s")


@memoised
def checks() -> dict:
    """The check section's numbers on the claim's reading."""
    import sympy as sp
    p = inputs()
    cf = rag(p, source="the claim's reading")
    cc = cf
    lo, hi = CLAIMED["llm_nodes_low"], CLAIMED["llm_nodes_high"]
    h_s, N_s, N_lo = sp.symbols("h N N_lo", positive=True)
    h_closed = sp.solve(sp.Eq((1 - h_s) * N_s, N_lo), h_s)[0]
    base = nodes_f(cc)
    h_60 = float(h_closed.subs({N_s: base, N_lo: lo}))
    h_ratio = float(h_closed.subs({N_s: hi, N_lo: lo}))          # the claim's own two numbers: 1 - 60/200
    # Second route: walk the decode batch up on the roofline until memory or the objective runs out.
    B, budget = 0, as_float(cc["M_kv"], "GB")
    kv_seq = as_float(cc["rho"] * cc["kappa"] * cc["T_f"], "GB")
    while (B + 1) * kv_seq <= budget and step_time(cc, B + 1, p.gpu) <= CLAIM["tpot_s"]:
        B += 1
    X2 = B / step_time(cc, B, p.gpu)
    nodes2 = CLAIM["qps"] * (as_float(cc["t_pf"], "s") + CLAIM["answer_tokens"] / X2)
    # The other reading of "the cache": the passages' KV reused; prefill of the question and decode remain.
    hkv = sp.symbols("h_kv", positive=True)
    hkv_60 = float(sp.solve(sp.Eq(base - hkv * as_float(cc["N_kv"], "node"), lo), hkv)[0])
    kv_passage = cc["rho"] * cc["kappa"] * cc["p_t"]
    kv_over_idx = as_float(kv_passage / (cf.data["idx"]["B_idx"] / cf.data["idx"]["V"]), "")
    overlap = float(math.ceil(max(as_float(cc["N_pf"], "node"), as_float(cc["N_dc"], "node"))))
    five = rag(inputs(passages=5), source="variant")
    # The claim's ratio at a published hit rate: the top of the semantic-cache range on the claim's own 200.
    at_published = (1 - SEMANTIC_HITS[1]) * hi
    return dict(fleet=cf, chain=cc, lo=lo, hi=hi, h_closed=h_closed, h_60=h_60, h_ratio=h_ratio, B=B, X2=X2,
                nodes2=nodes2, base=base, hkv_60=hkv_60, kv_passage=kv_passage, kv_over_idx=kv_over_idx,
                overlap=overlap, five=five, at_published=at_published)


def check_holds(ck: dict) -> bool:
    """The book's own figures hold together (the claim itself cannot be checked): the second route finds the same
    batch and tier, a passage-KV cache needs far more hits than an answer cache for the same tier, and the answer
    cache scales the tier by 1 - h whatever the prompt."""
    cc, five = ck["chain"], ck["five"]
    return all([abs(ck["h_ratio"] - 0.7) < 1e-12, ck["B"] == int(cc["B"].m), abs(ck["nodes2"] / ck["base"] - 1) < 1e-9,
                0 < ck["h_60"] < 1, ck["hkv_60"] > ck["h_60"] + 0.2, ck["kv_over_idx"] > 1000,
                abs(as_float(five["N_h"], "node") / as_float(five["N_0"], "node") - 0.3) < 0.02,
                as_float(five["N_0"], "node") > as_float(cc["N_0"], "node"),
                cc["B"] * cc["t_f"] > cc["t_w"] + cc["B"] * cc["t_kv"]])       # decode compute-bound: the sum holds


def claims() -> list[Claim]:
    ck = checks()
    cc, five, lo, hi = ck["chain"], ck["five"], ck["lo"], ck["hi"]
    published = (1 - SEMANTIC_HITS[1]) * hi, (1 - SEMANTIC_HITS[0]) * hi
    return [Claim(
        "cache-decides", quote=QUOTE, source=CLAIM_SOURCE,
        claimed=f"the cache decides whether the LLM tier is {fmt(q(lo, 'node'))} or {fmt(q(hi, 'node'))}",
        derived=(f"the book's workload: {fmt(cc['N_0'])} without a cache, {fmt(cc['N_h'])} behind an answer cache "
                 f"hitting {pct(CLAIM['cache_hit_rate'])}; with five passages {fmt(five['N_0'])} and {fmt(five['N_h'])}"),
        # The source names no prompt, answer, GPU or hit rate; the hit rate that takes 200 to 60 is the claim's
        # own two numbers, so nothing of the source's can be checked: the page shows the book's figure.
        verdict=UNCHECKABLE,
        reason=(f"The source names no prompt, answer, GPU or hit rate, and the tier at ten thousand queries a second "
                f"hangs on each; the {pct(ck['h_ratio'])} hit rate that takes {fmt(q(hi, 'node'))} to "
                f"{fmt(q(lo, 'node'))} is the claim's own two numbers, not a check (a published semantic cache, "
                f"{pct(SEMANTIC_HITS[0])} to {pct(SEMANTIC_HITS[1])}, would leave {fmt(published[0], digits=2)} to "
                f"{fmt(published[1], digits=2)} of the {fmt(hi)}). The book's own workload, at the shared achieved "
                f"shares of the peaks, gives {fmt(cc['N_0'])} without a cache and {fmt(cc['N_h'])} behind one; "
                f"a KV cache of the passages would need {pct(ck['hkv_60'])} of them to hit to reach "
                f"{fmt(q(lo, 'node'))}."))]


def check_texts(ck: dict) -> dict:
    import sympy as sp
    cc, cf, five = ck["chain"], ck["fleet"], ck["five"]
    return {"claim-nodes-60": fmt(q(ck["lo"], "node")), "claim-nodes-200": fmt(ck["hi"]),
            "claim-gpn": str(CLAIM["gpus_per_node"]), "claim-eta-p": pct(CLAIM["compute_fraction"]),
            "claim-eta-w": pct(CLAIM["bandwidth_fraction"]),
            "claim-tpot": fmt(q(CLAIM["tpot_s"], "s").to("ms")), "claim-question": fmt(q(CLAIM["question_tokens"], "token")),
            "claim-passages": str(CLAIM["passages"]), "claim-passage-tokens": fmt(q(CLAIM["passage_tokens"], "token")),
            "claim-answer": fmt(q(CLAIM["answer_tokens"], "token")),
            "claim-n0": fmt(cc["N_0"]), "claim-nh": fmt(cc["N_h"]), "claim-h": pct(CLAIM["cache_hit_rate"]),
            "check-h60": pct(ck["h_60"]), "check-hratio": pct(ck["h_ratio"]), "check-sem-lo": pct(SEMANTIC_HITS[0]),
            "check-sem-hi": pct(SEMANTIC_HITS[1]), "check-at-published": fmt(q(ck["at_published"], "node")),
            "check-b": fmt(ck["B"]), "check-x2": fmt(q(ck["X2"], "token/s")), "check-share": pct(as_float(cc["s_pf"], "")),
            "check-kv-share": pct(as_float(cc["N_kv"] / (cc["N_pf"] + cc["N_dc"]), "")),
            "check-kvmin": fmt(cc["N_kvmin"]), "check-hkv60": pct(ck["hkv_60"]), "check-overlap": fmt(q(ck["overlap"], "node")),
            "check-kv-passage": fmt(ck["kv_passage"], "MB"), "check-kv-over-idx": fmt(round(ck["kv_over_idx"], -3)),
            "check-corpus": short(CLAIM["corpus_passages"]), "check-five-n0": fmt(five["N_0"]),
            "check-five-nh": fmt(five["N_h"]), "check-h-closed": "$h = " + sp.latex(ck["h_closed"]) + "$",
            "check-index-passage": fmt(cf.data["idx"]["B_idx"] / cf.data["idx"]["V"], "kB")}


def readings_table(ck: dict) -> str:
    cc, five, h = ck["chain"], ck["five"], pct(CLAIM["cache_hit_rate"])
    rows = [("the claim's sizes, answer cache at the top published hit rate", f"{pct(SEMANTIC_HITS[1])} of queries",
             fmt(q(ck["at_published"], "node"))),
            ("this page: answer cache", f"{h} of queries", fmt(cc["N_h"])),
            ("answer cache, solved for the low side", f"{pct(ck['h_60'])} of queries", fmt(q(ck["lo"], "node"))),
            ("KV cache of every passage, no answer cache", "all passage tokens", fmt(cc["N_kvmin"])),
            ("no cache", "", fmt(cc["N_0"])),
            ("no cache, prefill overlapped with decode", "", fmt(q(ck["overlap"], "node"))),
            ("five passages, answer cache", f"{h} of queries", fmt(five["N_h"])),
            ("five passages, no cache", "", fmt(five["N_0"]))]
    return "| reading | hits | answer-model nodes |\n|---|---|---|\n" + "\n".join(f"| {a} | {b} | {c} |" for a, b, c in rows)


# --- figure, variants, exercises ------------------------------------------------------------------
def figure_data(f: Chain, p) -> dict:
    import numpy as np
    hs = np.linspace(0, 1.0, 201)
    shapes = [("the parameters", f)]
    if p.passages != 5:
        five = variant(p, passages=5)
        if not isinstance(five, str):
            shapes.append(("five passages", five))
    curves = [(label, nodes_f(ch, h=hs), nodes_f(ch, h_kv=hs)) for label, ch in shapes]
    gpn = p.gpus_per_node
    return dict(hs=hs, curves=curves, point=(p.cache_hit_rate, nodes_f(f, h=p.cache_hit_rate)),
                kv_min=nodes_f(f, h_kv=1.0), claimed=(CLAIMED["llm_nodes_high"], CLAIMED["llm_nodes_low"]),
                published=SEMANTIC_HITS, labels=["embedder", "reranker", "answer model"],
                no_cache=[as_float(f.data["enc"]["G_emb"], "GPU"), as_float(f.data["enc"]["G_rr0"], "GPU"),
                          as_float(f["N_0"], "node") * gpn],
                with_cache=[as_float(f.data["enc"]["G_emb"], "GPU"), as_float(f.data["enc"]["G_rr"], "GPU"),
                            as_float(f["N_h"], "node") * gpn])


def variants_table(p) -> str:
    cases = [("the parameters", {}), ("five passages", dict(passages=5)),
             ("passages of twice the tokens", dict(passage_tokens=2 * p.passage_tokens)),
             ("answers of twice the tokens", dict(answer_tokens=2 * p.answer_tokens)),
             ("achieved shares down a fifth", dict(compute_fraction=0.8 * p.compute_fraction,
                                                    bandwidth_fraction=0.8 * p.bandwidth_fraction)),
             ("half the answer-cache hit rate", dict(cache_hit_rate=p.cache_hit_rate / 2)),
             ("twice the rerank candidates", dict(rerank_candidates=2 * p.rerank_candidates))]
    cases += [(f"on {catalog.accelerator(k).name}", dict(gpu=k)) for k in ("h200", "b200") if k != p.gpu.key]
    rows = []
    for label, chg in cases:
        f = variant(p, **chg)
        rows.append(f"| {label} | {f} | | | |" if isinstance(f, str) else
                    f"| {label} | {fmt(f['N_0'])} | {fmt(f['N_h'])} | {fmt(f['G_rr0'])} | {fmt(f['G_emb'])} |")
    return ("| change | nodes, no cache | nodes, answer cache | reranker GPUs, no cache | embedder GPUs |\n"
            "|---|---|---|---|---|\n" + "\n".join(rows))


def what_changes(p, ch) -> dict:
    """The prose's variants, on the claim's reading."""
    ck = checks()
    cc, cf = ck["chain"], ck["fleet"]

    def cv(**changes):
        return rag(inputs(**changes), source="variant")
    five, long = cv(passages=5), cv(passage_tokens=2 * CLAIM["passage_tokens"])
    mfu = cv(compute_fraction=0.8 * CLAIM["compute_fraction"], bandwidth_fraction=0.8 * CLAIM["bandwidth_fraction"])
    half = cv(cache_hit_rate=CLAIM["cache_hit_rate"] / 2)
    b200, rr = cv(gpu="b200"), cv(rerank_candidates=2 * CLAIM["rerank_candidates"]).data["enc"]
    return {"wc-n0": fmt(cc["N_0"]), "wc-five": fmt(five["N_0"]), "wc-long-tokens": fmt(q(2 * CLAIM["passage_tokens"], "token")),
            "wc-long": fmt(long["N_0"]), "wc-per-passage": fmt(q(as_float(five["N_0"] - cc["N_0"], "node") / 2, "node")),
            "wc-point": fmt(q(0.01 * nodes_f(cc), "node")), "wc-mfu": pct(0.8 * CLAIM["compute_fraction"]),
            "wc-mfu-w": pct(0.8 * CLAIM["bandwidth_fraction"]),
            "wc-mfu-n": fmt(mfu["N_0"]), "wc-half-h": pct(CLAIM["cache_hit_rate"] / 2), "wc-half": fmt(half["N_h"]),
            "wc-b200": fmt(b200["N_0"]), "wc-b200-h": fmt(b200["N_h"]), "wc-rr": fmt(rr["G_rr0"]),
            "wc-rr0": fmt(cf.data["enc"]["G_rr0"]), "wc-rr-cand": fmt(2 * CLAIM["rerank_candidates"])}


def exercises(p, ch) -> dict:
    """Worked answers, glued into hidden dropdowns (on the claim's reading, like the check)."""
    import sympy as sp
    ck = checks()
    cc, ce, lo, hi = ck["chain"], ck["fleet"].data["enc"], ck["lo"], ck["hi"]
    h_s, N_s, N_lo = sp.symbols("h N N_lo", positive=True)
    ex1 = rag(inputs(passages=5, passage_tokens=256, answer_tokens=256), source="variant")
    h_ex1 = float(ck["h_closed"].subs({N_s: nodes_f(ex1), N_lo: hi}))
    h_ex1_60 = float(ck["h_closed"].subs({N_s: nodes_f(ex1), N_lo: lo}))
    assert h_ex1 < SEMANTIC_HITS[0] and h_ex1_60 > SEMANTIC_HITS[1]     # the prose: within and beyond the published
    per_passage = ce["p_t"] * (ce["c"] * ce["N_e"] + ce["a_e"] * ce["L_e"] * ce["d_e"] * ce["p_t"])
    total = per_passage * CLAIM["corpus_passages"]
    gpu_h = as_float(total / ce["P_e"], "GPU*hour")
    fleet_g = as_float(ce["G_emb"], "GPU")
    rr_fl = as_float(ce["m"] * ce["T_r"] * ce["f_r"], "TFLOP")
    llm_fl = as_float(cc["F_pf"] + cc["o"] * cc["f_d"], "TFLOP")
    return {"ex1-k": fmt(5), "ex1-p": fmt(q(256, "token")), "ex1-o": fmt(q(256, "token")), "ex1-tin": fmt(ex1["T_in"]),
            "ex1-n0": fmt(ex1["N_0"]), "ex1-share": pct(as_float(ex1["s_pf"], "")), "ex1-h": pct(h_ex1),
            "ex1-h60": pct(h_ex1_60), "ex2-corpus": short(CLAIM["corpus_passages"]), "ex2-per": fmt(per_passage, "TFLOP"),
            "ex2-tokens": fmt(ce["p_t"]), "ex2-f": fmt(per_passage / ce["p_t"], "GFLOP/token"),
            "ex2-total": fmt(total, "FLOP"), "ex2-gpuh": fmt(gpu_h), "ex2-days": fmt(gpu_h / fleet_g / 24),
            "ex2-fleet": fmt(q(fleet_g, "GPU")), "ex3-rr-tokens": fmt(q(as_float(ce["m"] * ce["T_r"], "token"), "token")),
            "ex3-llm-tokens": fmt(q(as_float(cc["T_in"] + cc["o"], "token"), "token")),
            "ex3-rr-flops": fmt(q(rr_fl, "TFLOP")), "ex3-llm-flops": fmt(q(llm_fl, "TFLOP")), "ex3-ratio": pct(rr_fl / llm_fl),
            "ex3-size-ratio": fmt(as_float(cc["N_a"] / ce["N_e"], ""), digits=2),
            "ex3-gpu-ratio": pct(as_float(ce["G_rr0"], "GPU") / (as_float(cc["N_0"], "node") * CLAIM["gpus_per_node"]))}


SPEC = Spec("rag-10k-qps", PARAMETERS, RESULTS, compute, validate=validate, closed_form=True)
