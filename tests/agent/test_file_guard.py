"""What a file change would remove that the request does not name, and replies that claim work no tool did."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from exo_core.agent.claims import claims_done
from exo_core.agent.file_guard import MAX_DIFF_CHARS, check_change, shown_diff, unnamed_removals

TODO = "# Todo\n## Ideas\n- buy milk\n- walk the dog\n"


def test_a_rewrite_that_drops_lines_names_them_and_an_append_drops_nothing(tmp_path: Path) -> None:
    path = tmp_path / "todo.md"
    path.write_text(TODO)
    rewrite = check_change("write_file", {"path": "todo.md", "content": "call the plumber\n"}, (str(path),), "append x")
    assert rewrite is not None and "- buy milk" in rewrite.unnamed and "-- buy milk" in rewrite.diff
    append = check_change("append_file", {"path": "todo.md", "content": "- call the plumber"}, (str(path),), "add it")
    assert append is not None and append.unnamed == () and "+- call the plumber" in append.diff


def test_removals_the_request_names_are_not_asked() -> None:
    assert unnamed_removals(TODO, TODO.replace("## Ideas", "## Plans"), "Rename the heading Ideas to Plans") == []
    assert unnamed_removals(TODO, TODO.replace("buy milk", "buy oat milk"), "replace 'buy milk' with oat milk") == []
    assert unnamed_removals(TODO, "", "clear the file") == []
    assert unnamed_removals(TODO, TODO.replace("- walk the dog\n", ""), "replace 'buy milk'") == ["- walk the dog"]


@given(st.text(max_size=3000), st.text(max_size=3000))
def test_a_diff_stays_within_its_cap(before: str, after: str) -> None:
    assert len(shown_diff(before, after, "f")) <= MAX_DIFF_CHARS + 60


def test_claims_of_finished_work_are_found_and_other_replies_are_not() -> None:
    for reply in ("I've added it to your todo.txt.", "Done.", "The file has been updated.", "Added 'eggs'."):
        assert claims_done(reply), reply
    for reply in ("Paris is the capital of France.", "I have not changed anything.", "Which file do you mean?"):
        assert not claims_done(reply), reply


def test_a_line_edited_in_place_is_not_a_removal_but_one_rewritten_is() -> None:
    text = "# Demo\n\nExo is a personla assistant that knows its person.\n- call mum on Sunday\n"
    typo = text.replace("personla", "personal")
    assert unnamed_removals(text, typo, "Fix the typo in README.md and push the branch") == []
    rewritten = text.replace("- call mum on Sunday", "- book the dentist")
    assert unnamed_removals(text, rewritten, "fix the typo") == ["- call mum on Sunday"]
