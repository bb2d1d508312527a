"""Run one Harbor trial with Harbor's own runner (`Trial`), as `harbor trials start` does, and
print its result as JSON: `python harbor_trial.py CONFIG_JSON`. Runs under Harbor's Python
(tests/harbortools.py), never in the suite's."""

from __future__ import annotations

import asyncio
import sys

from harbor.models.trial.config import TrialConfig
from harbor.trial.trial import Trial


async def main(config: TrialConfig) -> None:
    trial = await Trial.create(config)
    result = await trial.run()
    print(result.model_dump_json())


if __name__ == "__main__":
    asyncio.run(main(TrialConfig.model_validate_json(sys.argv[1])))
