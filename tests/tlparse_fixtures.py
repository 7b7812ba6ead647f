"""tlparse's own test logs (../shared/tlparse_inputs, next to the checkout, never copied into it) and
its CLI, for the tests that read traces side by side with tlparse; tests skip cleanly without them."""
import shutil
import sys
from pathlib import Path

import pytest

INPUTS = Path(__file__).resolve().parents[2] / "shared" / "tlparse_inputs"
if not INPUTS.is_dir():  # a checkout deeper than /work/<name> (a worktree): the machine's shared copy
    INPUTS = Path("/work/shared/tlparse_inputs")
TLPARSE = shutil.which("tlparse") or str(Path(sys.executable).parent / "tlparse")

SKIP_REASON = "tlparse's fixture logs are not at"
needs_inputs = pytest.mark.skipif(not INPUTS.is_dir(), reason=f"{SKIP_REASON} {INPUTS} "
                                  "(../shared/tlparse_inputs is provided next to the checkout, not in it)")
needs_tlparse = pytest.mark.skipif(not Path(TLPARSE).exists(), reason="the tlparse CLI is not installed "
                                   "(pip install tlparse==0.4.3, in the test extra)")
