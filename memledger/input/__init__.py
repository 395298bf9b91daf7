"""The input layer: bytes of a log -> `ParsedLog` (reader, scan, linegrammar, parsing, facts,
error_texts).

May import `memledger.sglang` (what the lines look like) and the contract
(`memledger.model.events`); never the engine, the renderers or the CLI.
"""
