"""SGLang's KV-pool sizing redone from a log's numbers, and what-if on its knobs (pure functions).

`sizing_inputs(parsed)` reads what the log printed; `size_log(inputs)` redoes SGLang's arithmetic
(rules in memledger.sglang.sizing_rules) beside the logged result; `whatif(inputs, changes)`
predicts the pools under other settings, anchored on the measured log.

Modules:

- `adjustment_values`: What SGLang's own setting change leaves to set: each lever of an `Adjustment`
  row with its value.
- `capacity`: Which GPU capacities give a mem_fraction_static default.
- `cell`: Bytes per token SGLang divided the budget by, rebuilt from the KV lines a log printed
  (pure).
- `defaults`: SGLang's mem_fraction_static default for a GPU capacity, as each release computes it
  (pure).
- `fraction`: The mem_fraction_static SGLang sized with, from the one it was given or chose (pure).
- `gpu`: The GPU capacity a log shows, for SGLang's mem_fraction_static default (pure).
- `host_pool`: HiCache's host pools on one host (a rank's each) and the --hicache-size that fits.
- `inputs`: The numbers SGLang sized its pools with, read from one parsed startup (what was printed
  only).
- `mamba`: How many Mamba/linear-attention state slots SGLang keeps and which rule takes their
  memory out of the KV budget, by release (pure; the rules are memledger.sglang.sizing_rules).
- `model`: SGLang's pool sizing redone from a log's numbers.
- `named_weights`: The weights a rank holds, estimated from the model's name, against the card.
- `requests`: The request table and the defaults SGLang derives from the token count (pure).
- `result`: The sizing verdict of one log.
- `settings`: The settings a log ran with, read from its knobs (the record is
  memledger.model.sizing's).
- `solve`: The inverse what-if.
- `whatif`: What-if.
- `vllm`: vLLM's KV-cache arithmetic redone with a log's own numbers, release by release.
"""

from memledger.sizing.inputs import SizingInputs, sizing_inputs
from memledger.sizing.model import predict
from memledger.sizing.result import size_log
from memledger.sizing.settings import base_settings
from memledger.sizing.whatif import WhatIf, WhatIfRow, whatif

__all__ = [
    "WhatIf",
    "WhatIfRow",
    "whatif",
    "SizingInputs",
    "base_settings",
    "predict",
    "size_log",
    "sizing_inputs",
]
