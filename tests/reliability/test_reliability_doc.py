"""docs/reliability.md lists every case of the suite, once, in order, as the suite wrote it.

Each row's content is checked by the test that runs its case (`doctable.check_row`); this
checks the table as a whole: no case missing, none extra, none left unobserved.
"""

from __future__ import annotations

from .doctable import DOC, FAULTS, doc_rows, render_block


def test_the_doc_lists_every_case_in_order() -> None:
    rows = doc_rows()
    assert list(rows) == list(FAULTS), "regenerate docs/reliability.md (see tests/reliability/doctable.py)"
    unobserved = [case for case, line in rows.items() if "(not run yet)" in line]
    assert not unobserved, f"rows never observed: {unobserved}"


def test_the_generated_block_is_untouched() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert render_block(doc_rows()) in text, "the table block was edited by hand; regenerate it"
