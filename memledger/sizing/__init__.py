"""SGLang's KV-pool sizing redone from a log's numbers, and what-if on its knobs (pure functions).

`sizing_inputs(parsed)` reads what the log printed; `size_log(inputs)` redoes SGLang's arithmetic
(rules in memledger.sglang.sizing_rules) beside the logged result; `whatif(inputs, changes)`
predicts the pools under other settings, anchored on the measured log.
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
