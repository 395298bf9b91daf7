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
"""
