"""The input layer: bytes of a log -> `ParsedLog` (reader, scan, linegrammar, parsing, facts,
error_texts).

May import `memledger.sglang` (what the lines look like) and the contract
(`memledger.model.events`); never the engine, the renderers or the CLI.

Modules:

- `ascii_view`: An ASCII stand-in for a line, for the readers' cheap word tests.
- `error_texts`: Error texts a failed startup leaves, read into events.
- `escaped`: A log printed as one escaped string (a repr, a JSON string), read as its lines.
- `extension_regex`: Regexp terminals of `--grammar` extensions.
- `facts`: `facts_of`.
- `grammar_cache`: A per-user cache of the packaged grammar's LALR tables, without pickle.
- `grep_early`: The prefilter's first grep, started at CLI entry before any other import of
  memledger.
- `grep_scan`: The grep prefilter.
- `gunzip`: Gunzip with a bound on what a gzipped input may expand to (security review F29).
- `launch_command`: A pasted SGLang launch command -> the settings it gives (never run, never
  evaluated).
- `launch_yaml`: A launch command written as YAML or as a list of words.
- `linegrammar`: The Lark message grammar.
- `log_list`: `@FILE` among the logs of `check` and `ledger`.
- `logical`: Physical lines -> logical SGLang lines.
- `outcome`: What a line says about how the startup ended.
- `parsing`: `parse_log`.
- `pasted`: Reading lines as people paste them.
- `prestart`: The CLI's one entry into the input layer before the command's imports.
- `quiet`: Lines that no reader before the grammar reads, known once per line shape.
- `ranks`: Which rank's lines a parse reads.
- `reader`: Streaming reader.
- `reported`: What a reporter typed around a paste, read from a bare prose line as typed events.
- `rewrap`: A paste a terminal hard-wrapped at its width, read with each line whole again.
- `saved_ledger`: A saved ledger is untrusted input (an artifact of another job, a cache from
  another branch).
- `scan`: The built-in keyword scanner.
- `server_args`: `server_args=ServerArgs(...)` / `server_args={...}` -> a typed parameter map, never
  evaluated.
- `shapecache`: Caches in front of the Lark message grammar, so that repeated line shapes skip the
  parser.
- `shapecheck`: What a stored line shape must satisfy before its tree stands in for the grammar.
- `shapestore`: The shape cache kept between runs, so that a run whose line shapes are all known
  skips Lark.
- `stdin_scan`: A big log on stdin through the grep prefilter, started before the imports.
- `store`: The event store of one parse.
- `transform`: The transformer.
- `wrapped`: Messages a terminal or a copy hard-wrapped.
- `wrappers`: What the tool a log came through puts before each of its lines, one shape a row.
- `engine_detect`: Which engine wrote a log.
- `vllm_facts`: The facts of one vLLM startup.
- `vllm_reader`: vLLM log text -> readings, grouped into startups (the input step for the vLLM
  engine).
"""
