"""The flow: one module per command, options in, an `Output` out.

Modules:

- `analyse`: one log analysed once (parsed log, sizing inputs, ledger, sizing, diagnosis).
- `against_release`: `memledger diff LOG --against-release X` (and `memledger.against_release`).
- `check`: `memledger check`'s flow.
- `diagnose`: `memledger diagnose`.
- `diff`: `memledger diff`.
- `emit`: Writing a command's `Output`.
- `fleet`: Many logs in one process.
- `ledger`: `memledger ledger`.
- `load`: Load an input.
- `open`: The one input opener.
- `options`: The options of every command and what a command returns.
- `parse`: `memledger parse`.
- `progress`: The progress bar of a run over many logs, on a terminal.
- `schema`: `memledger schema`.
- `whatif`: `memledger whatif`.
- `vllm`: the vLLM branch of the flow: a vLLM log read, sized, accounted and diagnosed.
"""
