"""Ledger x Ledger -> LedgerDiff, pure: `models` (the JSON contract), `categories` (how rows
are grouped and labelled), `compute` (matching rows and the state-pool analysis). What a
parameter change moves is SGLang knowledge: `memledger.sglang.effects`."""

from __future__ import annotations

from memledger.compare.categories import (
    DESTINATION_KEYS as DESTINATION_KEYS,
)
from memledger.compare.categories import (
    GROUP_LABELS as GROUP_LABELS,
)
from memledger.compare.categories import (
    OTHER_CATEGORY_ID as OTHER_CATEGORY_ID,
)
from memledger.compare.categories import (
    STATE_POOL_CATEGORIES as STATE_POOL_CATEGORIES,
)
from memledger.compare.categories import (
    SUMMARY_LABELS as SUMMARY_LABELS,
)
from memledger.compare.categories import (
    Category as Category,
)
from memledger.compare.categories import (
    group_label as group_label,
)
from memledger.compare.compute import (
    MAX_DEFAULT_LABEL as MAX_DEFAULT_LABEL,
)
from memledger.compare.compute import (
    default_labels as default_labels,
)
from memledger.compare.compute import (
    diff_ledgers as diff_ledgers,
)
from memledger.compare.compute import (
    kv_token_split as kv_token_split,
)
from memledger.compare.compute import (
    sort_rows as sort_rows,
)
from memledger.compare.models import (
    DELTA_PCT_DEFINITION as DELTA_PCT_DEFINITION,
)
from memledger.compare.models import (
    DIFF_SCHEMA_VERSION as DIFF_SCHEMA_VERSION,
)
from memledger.compare.models import (
    MIN_TOLERANCE_BYTES as MIN_TOLERANCE_BYTES,
)
from memledger.compare.models import (
    ByteChange as ByteChange,
)
from memledger.compare.models import (
    CategoryDiff as CategoryDiff,
)
from memledger.compare.models import (
    CheckpointDiff as CheckpointDiff,
)
from memledger.compare.models import (
    CoverageDiff as CoverageDiff,
)
from memledger.compare.models import (
    DiffInput as DiffInput,
)
from memledger.compare.models import (
    DiffInputs as DiffInputs,
)
from memledger.compare.models import (
    DiffStatus as DiffStatus,
)
from memledger.compare.models import (
    GroupDiff as GroupDiff,
)
from memledger.compare.models import (
    IntervalDiff as IntervalDiff,
)
from memledger.compare.models import (
    KvTokenSplit as KvTokenSplit,
)
from memledger.compare.models import (
    LedgerDiff as LedgerDiff,
)
from memledger.compare.models import (
    ParamDiff as ParamDiff,
)
from memledger.compare.models import (
    RowContribution as RowContribution,
)
from memledger.compare.models import (
    RowDiff as RowDiff,
)
from memledger.compare.models import (
    SideCoverage as SideCoverage,
)
from memledger.compare.models import (
    SortKey as SortKey,
)
from memledger.compare.models import (
    StatePoolAnalysis as StatePoolAnalysis,
)
from memledger.compare.models import (
    SummaryField as SummaryField,
)
from memledger.compare.models import (
    SummaryNumber as SummaryNumber,
)
from memledger.compare.models import (
    SummarySides as SummarySides,
)
from memledger.compare.models import (
    delta_pct as delta_pct,
)
