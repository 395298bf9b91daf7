"""What memledger knows about SGLang's logs, as data, in one place.

- `grammars/sglang.lark` (top level, shipped in the wheel): the line grammar, one rule per line
  shape, named after its event kind.
- `lines.py`: one `LineSpec` per kind (head, prefilter words, checkpoint flag, unkeyed sizes, and
  the `sizes`/`values` keys an event of the kind may carry, with their types) and the key tables
  (aliases, size/int keys). Read by `input/` (scan, parsing, transform), `rows.py`.
- `examples.py`: example lines and what each must parse to (the tests; the extension check).
- `errors.py`: every error text (OOM messages, refusals, pool exhaustion, traceback parts,
  process ends, outcome phrases) as one `ErrorText` entry; the prefilter's, the quiet test's
  and the readers' word lists are derived from it.
- `releases.py`: `ReleaseRange`, the one range type of every release-bounded rule, and `within`,
  the one (tri-state) predicate that asks whether a log's releases have a rule.
- `rows.py`, `versions.py`, `sizing_rules.py`: engine-side and sizing tables (below).

## Four tasks, and the files each touches
1. **A new wording of a known log line** (2 files): an alternative in `grammars/sglang.lark` and
   an example in `examples.py` (the example is the test). The rule's leading words are its head
   (`input/linegrammar.known_head`); `lines.py` changes only when the new wording holds none of
   the kind's prefilter `words` (the tests say so), or starts with a free word or a single word,
   where the grammar cannot give the head. Details under "Adding a line".
2. **A new OOM or refusal text** (1 file): an `ErrorText` in `errors.py` with its reader kind,
   regex, words, family, outcome, source and a synthetic example line; the shared test
   (tests/sglang/test_errors.py) checks it against its example, its words against its regex,
   and its words reach the prefilter. A number it captures is a key of `lines.ERROR_KEYS`.
3. **A new release's sizing rule** (3 files; 1 when a release only ends or moves a rule): a
   `SizingRule` in `sizing_rules.py` (or `fraction_rules.py`) with its `ReleaseRange` and
   `vX path:line`, the arithmetic in memledger/sizing/ asked by id
   (`inputs.version.within(RULE[id])`), and `test_rule_<id>` in tests/test_sizing_rules.py. A
   rule a release ends gets its `last`; tests/sglang/test_releases.py checks every range and
   citation with one function.
4. **A new output format** (2 files): a member of the command's format enum, its renderer and
   its `Format` entry in the command's `FORMATS` registry (memledger/render/, e.g.
   `render/diagnose.py`), and a test of the output. `--format`, the help text and the escaping
   follow from the registry.

## Adding a line
A new wording of a known line (SGLang renamed `Capture cuda graph begin`), or a new kind:
1. `grammars/sglang.lark`: an alternative of the rule, or a new rule named after its kind (`kind` or
   `kind__variant`) added to `message`. Keep the head a fixed run of words ending in
   punctuation or a distinct literal before `fields`: the contextual lexer must never be offered
   WORD and WORDS in one state. `tests/input/test_grammar.py::test_grammar_builds_in_strict_mode`
   says when it is (at runtime a collision silently loses lines).
2. `lines.py`, only when needed: the kind's `words` must hold a case-sensitive word of the new
   wording (a physical line without a prefilter word is never decoded;
   tests/sglang/test_lines.py names the example that has none). The head that makes a garbled
   copy "malformed" in `parse --coverage` comes from the grammar: the rule's leading quoted
   words, two or more, up to the first punctuation. A rule that starts with a free word
   (`label?`, `graph_words`) or a single word keeps a `head` regex in its `LineSpec` (and a
   rule of which the grammar gives the head needs none). A new kind also needs an
   `EventKind` member (`memledger/model/events.py`), its `sizes` and `values` keys (any other key is
   dropped, the line reported malformed) and, if its sizes are rows, an entry in `rows.py`.
3. `examples.py`: the line, its kind, its sizes as printed and the values that matter. The
   example is the test (tests/input/test_grammar.py, tests/sglang/test_lines.py) and protects the
   line from `--grammar` extensions, which are refused when they change how an example parses.
Head words that mean something (a role, a phase, a flag) become typed values in
`input/transform.py` (`_HeadReader`, one method per rule): nothing after the transformer reads
`Event.text`, so the facts, the engine and the version rules keep working for the new wording.

## Engine-side and dating tables (`rows.py`, `release_markers.py`, `versions.py`)
- `rows.py`: which log lines become ledger rows as printed (`LINE_ROWS`), which lines reveal a
  setting that server_args does not hold (`LOG_SETTINGS`), which kinds are checkpoints
  (`AVAIL_KINDS`, from `lines.py`) and which server_args keys a ledger keeps (`PARAMETER_KEYS`).
- `release_markers.py`: the ONE table that dates a log (`FORMAT_MARKS`: each line format with
  the first and last release that print it and the wheel line, `vX path:line`) and
  `release_range(events)`: the releases that could have written the lines, with the evidence
  (which line bounds it how). The engine (`versions.format_version`/`format_ceiling`), the sizing
  model (`SizingInputs.version`), the upgrade comparison and diagnose all read it.
- `versions.py`: the named version rules the engine applies (`RULES`, each with its
  `ReleaseRange` and source line).

### Adding a version rule
Add a `FormatMark` (or a `VersionRule`) with its release range and the SGLang source file, and
a test on a log line of that format. A mark tests an event's typed fields (kind, sizes, values),
never its text: if a format differs only in words, have the transformer emit a typed value for
it first (`input/transform.py`). The engine reads the table; no engine code changes.

## Sizing rules (`sizing_rules.py`, used by memledger/sizing/)
- `RULES`: each step of SGLang's KV-pool sizing (budget, world minimum, Mamba slots, SWA split,
  draft KV, page rounding, caps, request table, mem_fraction_static default) as a `SizingRule`
  with its `ReleaseRange` and the source line at a release (`vX path:line`).
- A log's release range is `release_markers.release_range`'s (above), as for the engine.

### Adding a sizing rule
Add a `SizingRule` (a moved rule gets a new entry; the old one keeps its `last`), apply it in
memledger/sizing/model.py via `inputs.version.within(RULE[id])`, and add `test_rule_<id>` in
tests/sizing/test_rules.py (a meta-test fails when a rule has none).

## Failure rules (`failure_rules.py`, used by memledger/diagnosis/)
- `PHASE_FRAMES`: which SGLang function (and file fragment) a traceback frame must name for a
  lifecycle phase, each row citing `vX path:line`; the innermost startup frame wins over serving
  frames, a draft worker's frame makes a target step inside it the draft's. `LOAD_SITES`: frames
  that explain a load-time OOM (the Transformers fallback, unquantized layers). The
  mem_fraction_static default is a sizing rule (`mfs_default`), its arithmetic for every
  release in `mfs_defaults.py`.
- Add a row with the function's `vX path:line`: tests/diagnosis/test_phase_frames.py checks
  every row on a synthetic traceback.

Modules:

- `adjustments`: Every line SGLang prints when it changes a memory setting by itself.
- `backend_defaults`: SGLang defaults by release that the KV pool depends on besides
  mem_fraction_static.
- `default_changes`: SGLang defaults that changed between releases and move the KV pool.
- `errors`: Every error text memledger reads, one `ErrorText` per text.
- `env_reports`: What a bug report's environment outputs print, pasted beside the log: one row a
  line shape.
- `effects`: What a parameter change plausibly moves in a ledger.
- `examples`: The example lines.
- `failure_rules`: What a failed startup's traceback and milestones mean.
- `findings`: What diagnose says of each finding and each valued lever: the words, severity or
  direction, and source, one row a wording.
- `fraction_rules`: SGLang's mem_fraction_static rules as data.
- `frameworks`: Frameworks that embed SGLang (RL trainers): their words, their names for SGLang's
  settings, their trainer's code and levers.
- `gpu_cards`: GPU capacities as SGLang reads them, for the cards a log can name.
- `hints`: What an unexplained residual most likely is.
- `launch_flags`: How an SGLang launch command names the ServerArgs fields (SGLang knowledge, as
  data).
- `known_bugs`: Defects some SGLang releases have and a later one fixed, one `KnownBug` each.
- `levers`: A lever: one SGLang setting, the way to move it and what that changes, with the
  arithmetic of its value when the evidence carries the numbers.
- `lifecycle`: SGLang's memory lifecycle, one stage per phase: what it allocates, what bounds it,
  its levers.
- `lines`: Every SGLang log line memledger reads.
- `measured_spans`: Intervals whose whole remainder SGLang's lifecycle names: measured phase rows.
- `mfs_defaults`: SGLang's mem_fraction_static default arithmetic, every release.
- `releases`: SGLang release numbers, and the one release-range type and its predicate.
- `release_markers`: Which SGLang releases could have written a log, by what its lines print.
- `request_table`: The request table's (req_to_token's) rows and columns beyond context_len, by
  release (pure).
- `rows`: SGLang log lines that become ledger rows or parameters as printed (engine-side data).
- `rule_record`: One step of SGLang's pool sizing as data (memledger.sglang.sizing_rules,
  fraction_rules).
- `sizing_rules`: SGLang's KV-pool sizing arithmetic as data.
- `versions`: The engine's version-dependent rules, and its view of a log's release.
- `weight_bytes`: Bytes a parameter by the format a model name or --quantization spells, and how
  a name spells its parameter count.
"""
