"""The book's code, laid out the way the book is read. Each room below says what lives there and which rooms
it may import (tests/framework/test_rooms.py holds these rules, lazy imports included, and finds no cycle).

The framework, the modules at this level: `units` (the one pint registry and the one number formatter),
`params` (parameter specs and checks, a chapter's `Spec`, `Result` and `Inputs`), `chain` (a chain of steps
that renders as a table and solves for any unknown), `formula_code` (the stored code of every chain formula,
formula_code.json) and `formula_math` (the functions that code calls: math for a scalar, numpy only for an
array, so a closed-form chapter computes without numpy, in the reader's browser too), `verdicts`, `results`
(publishing and glue), `display` (tables, source blocks, the figure style), `measured` (the chapters' only
door to the GPU records), `rederive` (the reader's command),
`measure` (the GPU harness's command, a door into gpu/), and the arithmetic that crosses parts: `models`
(parameter and FLOP counts from an architecture, KV bytes) and `roofline`.
    May import: the framework, catalog/. `measured` and `measure` also gpu/; `results` also chains/ (a page
    publishes its chapter's results and claims through the registry); `rederive` also chains/ and tools/ (the
    reader's command re-derives a chapter and writes its page).

catalog/: sourced data, one TOML file a kind (accelerators, interconnects, models, prices, runs, software,
per-SM limits, NVIDIA's SuperPOD fabric table), each value with its source, kind and date; `entries` (the schema
and look-ups), and the loaders of a reader's own files: `hf_config` (a Hugging Face config.json) and `specfile`
(a spec file).
    May import: the framework's `units` and `models`, and itself.

training/, serving/, fleet/: one package a part of the book (Parts 3, 4 and 5; Part 1's KV-cache arithmetic
is serving's), each holding that part's shared arithmetic (in its __init__), simulators and building blocks.
Each module's docstring names the chapters that use it.
    May import: the framework, catalog/, components/, and the parts before them: training/ none, serving/
    training/, fleet/ training/ and serving/.

components/: the building blocks of Part 6 (a circuit breaker, a token bucket, an idempotent API, a work
queue, ...): real mechanisms with their own contracts, usable outside the book.
    May import: nothing else from utils (the standard library and numpy only).

chains/: one module per chapter (`chains/fleet_size.py` for `fleet-size`): its `SPEC`, its chain as a pure
function of its parameters, its claims. The package itself is the registry (`chains.derive(slug, ...)`).
    May import: anything but tools/; a chain module never imports the registry (another chapter's chain is
    that module's SPEC).

gpu/: the GPU side, walled in: the measurement harness (`harness`) and its record schema, the measurements,
the Triton kernels, the CUDA sources, and the GPU rules both sides use (occupancy, coalescing, bank
conflicts, the profile reader, the byte counter, the Triton-gaps scanner).
    May import: itself, the standard library, numpy, torch and triton (the GPU machines have nothing else).

tools/: the book's own machinery: executing and benchmarking chapters, the PDF, the re-derived page, the
generated index pages, the formula-code writer.
    May import: anything.
"""
