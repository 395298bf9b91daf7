"""What memledger knows about SGLang's logs, as data, in one place.

## Engine-side tables (`rows.py`, `versions.py`)
- `rows.py`: which log lines become ledger rows as printed (`LINE_ROWS`), which lines reveal a
  setting that server_args does not hold (`LOG_SETTINGS`), which kinds are checkpoints
  (`AVAIL_KINDS`) and which server_args keys a ledger keeps (`PARAMETER_KEYS`).
- `versions.py`: the SGLang release a line's format implies (`FORMAT_MARKS`, one entry per
  format change with the SGLang source file that prints it) and the named version rules the
  engine applies (`RULES`, each with its release range and source file).

### Adding a version rule
Add a `FormatMark` (or a `VersionRule`) with its release range and the SGLang source file, and
a test on a log line of that format. The engine reads the table; no engine code changes.

## Sizing rules (`sizing_rules.py`, used by memledger/sizing/)
- `RULES`: each step of SGLang's KV-pool sizing (budget, world minimum, Mamba slots, SWA split,
  draft KV, page rounding, caps, request table, mem_fraction_static default) as a `SizingRule`
  with its release range (`first`..`last`) and the source line at a release (`vX path:line`).
- `FORMAT_MARKERS`: the log formats that bound a log's release for the sizing model.

### Adding a sizing rule
Add a `SizingRule` (a moved rule gets a new entry; the old one keeps its `last`), apply it in
memledger/sizing/model.py via `inputs.version.within(RULE[id])`, and add `test_rule_<id>` in
tests/test_sizing_rules.py (a meta-test fails when a rule has none).
"""
